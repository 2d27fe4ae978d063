// An attention layer, forward and backward, for one attention kind (softmax or ReLU) on the causal
// task, in C++ with GCC vector extensions; built and loaded by empirical/compiled/build.py, which
// fixes LEN (L, keys) and DIM (d, features) at compile time (powers of two) and, with
// -DREAL_DOUBLE, the float type. The layer (empirical/model.py derives it): per member, sequence
// and score row r = (query i, head h), with G_h = W_K^T W_Q and M_h = W_O^h W_V^h,
//
//   forward:  y_r = G_h x_i;  s_rk = y_r . x_k;  a_r = kind(s_r) over the keys k <= i (0 elsewhere);
//             z_r = sum_k a_rk x_k;  out_i = [x_i +] sum_h M_h z_(i,h)
//   backward: gz_r = M_h^T gout_i;  gM_h += gout_i z_r^T;  ga_rk = gz_r . x_k (+ the pattern's
//             gradient);  gs_r = kind'(ga_r);  gy_r = sum_k gs_rk x_k;  gG_h += gy_r x_i^T;
//             gx_k += a_rk gz_r + gs_rk y_r;  gx_i += G_h^T gy_r  [+ gout_i]
//
//   softmax: a = exp(s - max) / sum, gs = a * (ga - sum_k ga a)      (torch's softmax backward)
//   ReLU:    a = max(s, 0) / max(i, 1), gs = ga / max(i, 1) where a > 0, else 0
//
// Why it is written this way: every product here is a 16 x 16 block per sequence, where a BLAS
// runs at a fraction of its speed and every intermediate (y, z, gz, gy: 2.6 MB each at the 4 x 4,
// 5-member shape) would go through memory. Here a sequence's rows x_k (and their transpose) stay
// in vector registers, one row of scores is one vector, RB rows are in flight at once so that
// their dependency chains (16-term multiply-adds, max, exp, sum) overlap, and nothing but the
// pattern (which the model returns) is written out: the backward recomputes y and z.
// Weight gradients are summed per sequence, then over the sequences (two levels, so that a
// float32 sum over B*L rows stays accurate).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#ifdef REAL_DOUBLE
typedef double real;
#else
typedef float real;
#endif
constexpr int L = LEN, D = DIM, RB = 4;  // RB: rows in flight (L * H is a multiple of 4)
typedef real vk __attribute__((vector_size(L * sizeof(real))));  // one value per key
typedef real vd __attribute__((vector_size(D * sizeof(real))));  // one value per feature
typedef int32_t ik __attribute__((vector_size(L * 4)));

static inline vk load_k(const real *p) { vk v; memcpy(&v, p, sizeof v); return v; }
static inline vd load_d(const real *p) { vd v; memcpy(&v, p, sizeof v); return v; }
static inline void store_k(real *p, vk v) { memcpy(p, &v, sizeof v); }
static inline void store_d(real *p, vd v) { memcpy(p, &v, sizeof v); }

// exp on x <= 0: float: Cephes' expf (range reduction by ln 2, degree-5 polynomial; relative
// error ~1e-7; 0 below -87, where exp is under 1.7e-38, instead of torch's denormal or 0);
// double: libm's exp, element by element (the float64 build is for the tests).
static inline vk exp_k(vk x) {
#ifdef REAL_DOUBLE
    vk r;
    for (int k = 0; k < L; k++) r[k] = exp(x[k]);
    return r;
#else
    const auto tiny = x < -87.0f;
    x = tiny ? (vk){} - 87.0f : x;
    vk fx = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
    x = x - fx * 0.693359375f;
    x = x - fx * -2.12194440e-4f;
    vk z = x * x;
    vk p = ((((1.9875691500E-4f * x + 1.3981999507E-3f) * x + 8.3334519073E-3f) * x
             + 4.1665795894E-2f) * x + 1.6666665459E-1f) * x + 5.0000001201E-1f;
    p = p * z + x + 1.0f;
    ik n = (__builtin_convertvector(fx, ik) + 127) << 23;  // 2^fx as the float's exponent bits
    vk scale;
    memcpy(&scale, &n, sizeof scale);
    return tiny ? (vk){} : p * scale;
#endif
}

// Horizontal sum and max over the keys: AVX-512's when a row is one float register, else halving.
static inline real hsum(vk v) {
#if defined(__AVX512F__) && !defined(REAL_DOUBLE) && LEN == 16
    return _mm512_reduce_add_ps((__m512)v);
#else
    real b[L];
    memcpy(b, &v, sizeof b);
    for (int w = L / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) b[k] += b[k + w];
    return b[0];
#endif
}

static inline real hmax(vk v) {
#if defined(__AVX512F__) && !defined(REAL_DOUBLE) && LEN == 16
    return _mm512_reduce_max_ps((__m512)v);
#else
    real b[L];
    memcpy(b, &v, sizeof b);
    for (int w = L / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) b[k] = b[k + w] > b[k] ? b[k + w] : b[k];
    return b[0];
#endif
}

static inline vk key_index() { vk v; for (int k = 0; k < L; k++) v[k] = k; return v; }

// A sequence's rows x_k (X) and their transpose (XT: XT[c][k] = x_kc).
static inline void load_rows(const real *xn, vd X[L], vk XT[D]) {
    for (int k = 0; k < L; k++) X[k] = load_d(xn + k * D);
    for (int c = 0; c < D; c++)
        for (int k = 0; k < L; k++) XT[c][k] = xn[k * D + c];
}

// sum_c v[c] * rows[c * stride]: a vector-matrix product, v's entries broadcast from memory.
static inline vd combine(const real *v, const real *rows, int64_t stride) {
    vd acc0 = {}, acc1 = {};  // two chains
    for (int c = 0; c < D; c += 2) {
        acc0 += v[c] * load_d(rows + c * stride);
        acc1 += v[c + 1] * load_d(rows + (c + 1) * stride);
    }
    return acc0 + acc1;
}

// The kind's weights of one score row s over the keys k <= i.
static inline vk weights(int kind, vk s, int i, vk keys) {
    const auto seen = keys <= (real)i;
    if (kind == 0) {
        const real m = hmax(seen ? s : (vk){} - 3e38f);
        const vk e = seen ? exp_k(seen ? s - m : (vk){}) : (vk){};
        return e * (1 / hsum(e));
    }
    const real div = i > 1 ? i : 1;
    return (seen && s > 0) ? s / div : (vk){};
}

// The kind's backward: the score gradient from the weights' gradient ga and the weights a.
static inline vk weights_grad(int kind, vk ga, vk a, int i) {
    if (kind == 0) return a * (ga - hsum(ga * a));
    const real div = i > 1 ? i : 1;
    return a > 0 ? ga / div : (vk){};
}

// Shapes, per member m < S: x, out [B, L, D]; Gt [D, H*D] (G_h^T side by side: Gt[e][h*D + c] =
// G_h[c][e]); Mt [H*D, D] (Mt[h*D + c][e] = M_h[e][c]); a [B, L*H, L] (rows: query, head).
extern "C" void layer_forward(int kind, int64_t S, int64_t B, int H, int residual, const real *__restrict x,
                              const real *__restrict Gt, const real *__restrict Mt, real *__restrict a,
                              real *__restrict out) {
    const vk keys = key_index();
    const int64_t HD = (int64_t)H * D;
    for (int64_t m = 0; m < S; m++) {
        const real *G = Gt + m * D * HD, *M = Mt + m * HD * D;
        for (int64_t b = 0; b < B; b++) {
            const int64_t n = m * B + b;
            const real *xn = x + n * L * D;
            vd X[L], OUT[L]; vk XT[D];
            load_rows(xn, X, XT);
            for (int k = 0; k < L; k++) OUT[k] = residual ? X[k] : (vd){};
            for (int r0 = 0; r0 < L * H; r0 += RB) {
                real *ao = a + (n * L * H + r0) * L;
                real y[RB][D], z[RB][D];  // in memory: their entries are broadcast
                for (int j = 0; j < RB; j++) {
                    const int i = (r0 + j) / H, h = (r0 + j) % H;
                    const vd v = combine(xn + i * D, G + h * D, HD);
                    memcpy(y[j], &v, sizeof v);
                }
                vk s[RB] = {};
                for (int c = 0; c < D; c++)
                    for (int j = 0; j < RB; j++) s[j] += y[j][c] * XT[c];
                for (int j = 0; j < RB; j++) store_k(ao + j * L, weights(kind, s[j], (r0 + j) / H, keys));
                vd zr[RB] = {};
                for (int k = 0; k < L; k++)
                    for (int j = 0; j < RB; j++) zr[j] += ao[j * L + k] * X[k];
                for (int j = 0; j < RB; j++) {
                    const int i = (r0 + j) / H, h = (r0 + j) % H;
                    memcpy(z[j], &zr[j], sizeof zr[j]);
                    OUT[i] += combine(z[j], M + h * D * D, D);
                }
            }
            for (int k = 0; k < L; k++) store_d(out + n * L * D + k * D, OUT[k]);
        }
    }
}

// GtT, MtT: Gt and Mt transposed per member ([H*D, D], [D, H*D]). gout [S, B, L, D] or NULL (the
// loss reads only the pattern: gM is then not written); gpat [S, B, L*H, L] or NULL. Writes gGt
// [S, D, H*D], gMt [S, H*D, D] and, if gx is not NULL, gx [S, B, L, D] (+ gout if residual).
extern "C" void layer_backward(int kind, int64_t S, int64_t B, int H, int residual, const real *__restrict x,
                               const real *__restrict Gt, const real *__restrict GtT, const real *__restrict MtT,
                               const real *__restrict a, const real *__restrict gout,
                               const real *__restrict gpat, real *__restrict gx, real *__restrict gGt,
                               real *__restrict gMt) {
    const int64_t HD = (int64_t)H * D;
    std::vector<vd> gG_seq(HD), gM_seq(HD), gG_all(HD), gM_all(HD);  // rows of gGt / gMt by (h, c)
    for (int64_t m = 0; m < S; m++) {
        const real *G = Gt + m * D * HD, *GT = GtT + m * HD * D, *MT = MtT + m * D * HD;
        for (auto *v : {&gG_all, &gM_all}) for (auto &r : *v) r = (vd){};
        for (int64_t b = 0; b < B; b++) {
            const int64_t n = m * B + b;
            const real *xn = x + n * L * D, *gon = gout ? gout + n * L * D : nullptr;
            vd X[L], GX[L]; vk XT[D];
            load_rows(xn, X, XT);
            for (int k = 0; k < L; k++) GX[k] = (gon && residual) ? load_d(gon + k * D) : (vd){};
            for (auto *v : {&gG_seq, &gM_seq}) for (auto &r : *v) r = (vd){};
            for (int r0 = 0; r0 < L * H; r0 += RB) {
                const int64_t o = n * L * H + r0;
                const real *ao = a + o * L;
                real y[RB][D], gz[RB][D], gy[RB][D];
                vd yv[RB], zv[RB] = {}, gzv[RB];
                for (int j = 0; j < RB; j++) {
                    const int i = (r0 + j) / H, h = (r0 + j) % H;
                    yv[j] = combine(xn + i * D, G + h * D, HD);
                    memcpy(y[j], &yv[j], sizeof yv[j]);
                    gzv[j] = gon ? combine(gon + i * D, MT + h * D, HD) : (vd){};
                    memcpy(gz[j], &gzv[j], sizeof gzv[j]);
                }
                for (int k = 0; k < L; k++)
                    for (int j = 0; j < RB; j++) zv[j] += ao[j * L + k] * X[k];
                vk ga[RB];
                for (int j = 0; j < RB; j++) ga[j] = gpat ? load_k(gpat + (o + j) * L) : (vk){};
                for (int c = 0; c < D; c++)
                    for (int j = 0; j < RB; j++) ga[j] += gz[j][c] * XT[c];
                real gs[RB][L];
                for (int j = 0; j < RB; j++) {
                    const vk g = weights_grad(kind, ga[j], load_k(ao + j * L), (r0 + j) / H);
                    memcpy(gs[j], &g, sizeof g);
                }
                vd gyv[RB] = {};
                for (int k = 0; k < L; k++) {
                    vd gk = GX[k];
                    for (int j = 0; j < RB; j++) {
                        gyv[j] += gs[j][k] * X[k];
                        gk += ao[j * L + k] * gzv[j] + gs[j][k] * yv[j];
                    }
                    GX[k] = gk;
                }
                for (int j = 0; j < RB; j++) {
                    const int i = (r0 + j) / H, h = (r0 + j) % H;
                    memcpy(gy[j], &gyv[j], sizeof gyv[j]);
                    if (gon) {
                        real zr[D];
                        memcpy(zr, &zv[j], sizeof zr);
                        const vd go = load_d(gon + i * D);
                        for (int c = 0; c < D; c++) gM_seq[h * D + c] += zr[c] * go;  // gMt[h*D + c] += z_c gout_i
                    }
                    for (int e = 0; e < D; e++) gG_seq[h * D + e] += xn[i * D + e] * gyv[j];  // gGt[e][h*D ..] += x_ie gy
                    GX[i] += combine(gy[j], GT + h * D * D, D);  // G_h^T gy_r
                }
            }
            for (int q = 0; q < HD; q++) { gG_all[q] += gG_seq[q]; gM_all[q] += gM_seq[q]; }
            if (gx)
                for (int k = 0; k < L; k++) store_d(gx + n * L * D + k * D, GX[k]);
        }
        // gG_all[h*D + e] is gGt[m][e][h*D : h*D + D]; gM_all[h*D + c] is gMt[m][h*D + c][:].
        for (int h = 0; h < H; h++)
            for (int e = 0; e < D; e++) store_d(gGt + m * D * HD + e * HD + h * D, gG_all[h * D + e]);
        if (gout)
            for (int q = 0; q < HD; q++) store_d(gMt + m * HD * D + q * D, gM_all[q]);
    }
}
