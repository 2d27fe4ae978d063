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
// in vector registers (a row of 16 floats is one register with AVX-512, two with AVX), R rows
// are in flight at once so that their dependency chains (16-term multiply-adds, max, exp, sum)
// overlap, and nothing but the pattern (which the model returns) and the output is written out:
// the backward recomputes y and z. Causality: a query's weights are 0 past it, so the sums over
// keys stop after a block's last query (skipped terms were exact zeros). Weight gradients are
// summed per sequence, then over the sequences (so that a float32 sum over B*L rows stays accurate).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#ifdef REAL_DOUBLE
typedef double real;
typedef int64_t lane_int;
#else
typedef float real;
typedef int32_t lane_int;
#endif
constexpr int L = LEN, D = DIM;

// A row of N values as native vector registers (64 bytes with AVX-512, 32 with AVX, 16 else):
// GCC lowers a vector type wider than the host's registers lane by lane through memory (5-10x
// slower), so a row is an array of native parts, and every operation below loops over the parts.
// Rows in flight, forward (RF) and backward (RBW), per register file (timed on a 4 x 4 layer at the
// ensemble's shape, AMD EPYC; empirical/training/README.md, Cost): AVX-512 takes 8 both ways; AVX2
// (16 registers of half a row) 8 forward, 4 backward (8 spilled there: 1.13x slower).
#if defined(__AVX512F__)
constexpr int NATIVE = 64, RF = 8, RBW = 8;
#elif defined(__AVX__)
constexpr int NATIVE = 32, RF = 8, RBW = 4;
#else
constexpr int NATIVE = 16, RF = 4, RBW = 4;
#endif
constexpr int rows_in_flight(int r) { return r < L ? r : L; }  // a block stays within the L queries
template <int N> struct Vec {
    static constexpr int BYTES = N * (int)sizeof(real) < NATIVE ? N * (int)sizeof(real) : NATIVE;
    static constexpr int PARTS = N * (int)sizeof(real) / BYTES;
    typedef real part __attribute__((vector_size(BYTES)));
    typedef lane_int mask_part __attribute__((vector_size(BYTES)));
    part p[PARTS];
};
template <int N> struct Mask { typename Vec<N>::mask_part p[Vec<N>::PARTS]; };
typedef Vec<L> vk;  // one value per key
typedef Vec<D> vd;  // one value per feature

#define PARTS_OF(N) for (int i = 0; i < Vec<N>::PARTS; i++)
template <int N> static inline Vec<N> &operator+=(Vec<N> &a, const Vec<N> &b) { PARTS_OF(N) a.p[i] += b.p[i]; return a; }
template <int N> static inline Vec<N> operator+(Vec<N> a, const Vec<N> &b) { return a += b; }
template <int N> static inline Vec<N> operator*(Vec<N> a, const Vec<N> &b) { PARTS_OF(N) a.p[i] *= b.p[i]; return a; }
template <int N> static inline Vec<N> operator*(real s, Vec<N> a) { PARTS_OF(N) a.p[i] = s * a.p[i]; return a; }
template <int N> static inline Vec<N> operator-(Vec<N> a, real s) { PARTS_OF(N) a.p[i] = a.p[i] - s; return a; }
template <int N> static inline Vec<N> operator/(Vec<N> a, real s) { PARTS_OF(N) a.p[i] = a.p[i] / s; return a; }
template <int N> static inline Mask<N> operator<=(const Vec<N> &a, real s) { Mask<N> m; PARTS_OF(N) m.p[i] = a.p[i] <= s; return m; }
template <int N> static inline Mask<N> operator>(const Vec<N> &a, real s) { Mask<N> m; PARTS_OF(N) m.p[i] = a.p[i] > s; return m; }
template <int N> static inline Mask<N> operator&(Mask<N> m, const Mask<N> &n) { PARTS_OF(N) m.p[i] &= n.p[i]; return m; }
template <int N> static inline Vec<N> select(const Mask<N> &m, const Vec<N> &a, const Vec<N> &b) {
    Vec<N> r;
    PARTS_OF(N) r.p[i] = m.p[i] ? a.p[i] : b.p[i];
    return r;
}
template <int N> static inline Vec<N> splat(real s) { Vec<N> r; PARTS_OF(N) r.p[i] = s - (typename Vec<N>::part){}; return r; }

// Loads and stores part by part: one memcpy of a whole several-part row, GCC copies through the
// stack in 16-byte pieces, which the row's 32-byte loads then cannot take from the store buffer
// (the AVX2 build ran 1.8-2x slower for it; a one-part row is one move either way).
template <int N> static inline Vec<N> load(const real *p) {
    constexpr int n = Vec<N>::BYTES / (int)sizeof(real);
    Vec<N> v;
    PARTS_OF(N) memcpy(&v.p[i], p + i * n, sizeof v.p[i]);
    return v;
}
template <int N> static inline void store(real *p, const Vec<N> &v) {
    constexpr int n = Vec<N>::BYTES / (int)sizeof(real);
    PARTS_OF(N) memcpy(p + i * n, &v.p[i], sizeof v.p[i]);
}
static inline vk load_k(const real *p) { return load<L>(p); }
static inline vd load_d(const real *p) { return load<D>(p); }
static inline void store_d(real *p, const vd &v) { store<D>(p, v); }

// exp on x <= 0: float: Cephes' expf (range reduction by ln 2, degree-5 polynomial; relative
// error ~1e-7; 0 below -87, where exp is under 1.7e-38, instead of torch's denormal or 0);
// double: libm's exp, element by element (the float64 build is for the tests).
template <int N> static inline Vec<N> exp_k(Vec<N> x) {
#ifdef REAL_DOUBLE
    real b[N];
    memcpy(b, &x, sizeof b);
    for (int k = 0; k < N; k++) b[k] = exp(b[k]);
    return load<N>(b);
#else
    typedef typename Vec<N>::part part;
    typedef typename Vec<N>::mask_part ipart;
    PARTS_OF(N) {
        part v = x.p[i];
        const ipart tiny = v < -87.0f;
        v = tiny ? (part){} - 87.0f : v;
        const part fx = (v * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(v / ln 2)
        v = v - fx * 0.693359375f;
        v = v - fx * -2.12194440e-4f;
        const part z = v * v;
        part q = ((((1.9875691500E-4f * v + 1.3981999507E-3f) * v + 8.3334519073E-3f) * v
                   + 4.1665795894E-2f) * v + 1.6666665459E-1f) * v + 5.0000001201E-1f;
        q = q * z + v + 1.0f;
        const ipart n = (__builtin_convertvector(fx, ipart) + 127) << 23;  // 2^fx as the float's exponent bits
        x.p[i] = tiny ? (part){} : q * (part)n;
    }
    return x;
#endif
}

// Horizontal sum and max over the keys: the parts first, then AVX-512's reduction where a part
// is one float register, else the part's lanes from memory (one store, loads it contains).
template <bool MAX, typename P> static inline real reduce_lanes(P t) {  // the max (MAX) or the sum
#if defined(__AVX512F__) && !defined(REAL_DOUBLE)
    if constexpr (sizeof(P) == 64) return MAX ? _mm512_reduce_max_ps((__m512)t) : _mm512_reduce_add_ps((__m512)t);
#endif
    constexpr int n = sizeof(P) / sizeof(real);
    real b[n];
    memcpy(b, &t, sizeof b);
    for (int w = n / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) b[k] = MAX ? (b[k + w] > b[k] ? b[k + w] : b[k]) : b[k] + b[k + w];
    return b[0];
}

template <bool MAX, int N> static inline real reduce(const Vec<N> &v) {  // over the parts, then the lanes
    typename Vec<N>::part t = v.p[0];
    for (int i = 1; i < Vec<N>::PARTS; i++) t = MAX ? (v.p[i] > t ? v.p[i] : t) : t + v.p[i];
    return reduce_lanes<MAX>(t);
}
template <int N> static inline real hsum(const Vec<N> &v) { return reduce<false>(v); }
template <int N> static inline real hmax(const Vec<N> &v) { return reduce<true>(v); }

template <int N> static inline Vec<N> key_index() { real b[N]; for (int k = 0; k < N; k++) b[k] = k; return load<N>(b); }

// The first N of a row's L keys, where those are whole parts of the row (N = L or, with several
// parts, L / 2): a block whose queries all come before L / 2 reads no key after it (causality),
// so its scores, weights and their gradients are rows of L / 2 keys (1.1x faster on AVX2; with
// AVX-512 a row of 16 keys is one register, and nothing changes).
constexpr int HALF = vk::PARTS > 1 ? L / 2 : L;
template <int N> static inline Vec<N> first(const vk &v) {
    static_assert(N == L || Vec<N>::BYTES == vk::BYTES, "the first N keys are whole parts of the row");
    Vec<N> r;
    PARTS_OF(N) r.p[i] = v.p[i];
    return r;
}

// A sequence's rows x_k (X) and their transpose (XT: XT[c][k] = x_kc), the transpose through memory.
static inline void load_rows(const real *xn, vd X[L], vk XT[D]) {
    real t[D][L];
    for (int k = 0; k < L; k++) {
        X[k] = load_d(xn + k * D);
        for (int c = 0; c < D; c++) t[c][k] = xn[k * D + c];
    }
    for (int c = 0; c < D; c++) XT[c] = load_k(t[c]);
}

// The kind's weights of a block's R score rows s_j over the keys k <= i0 + j (of their first N
// keys); softmax's each step over all rows before the next, so that the rows' chains (max, exp,
// sum: a reduction each) overlap (1.1x faster forward than row after row).
template <int R, int N> static inline void weights_rows(int kind, const Vec<N> s[R], int i0, Vec<N> out[R]) {
    const Vec<N> keys = key_index<N>(), zero{};
    if (kind != 0) {
        for (int j = 0; j < R; j++) {
            const real div = i0 + j > 1 ? i0 + j : 1;
            out[j] = select((keys <= (real)(i0 + j)) & (s[j] > 0), s[j] / div, zero);
        }
        return;
    }
    real m[R], t[R];
    for (int j = 0; j < R; j++) m[j] = hmax(select(keys <= (real)(i0 + j), s[j], splat<N>(-3e38f)));
    for (int j = 0; j < R; j++) {
        const Mask<N> seen = keys <= (real)(i0 + j);
        out[j] = select(seen, exp_k(select(seen, s[j] - m[j], zero)), zero);
    }
    for (int j = 0; j < R; j++) t[j] = 1 / hsum(out[j]);
    for (int j = 0; j < R; j++) out[j] = t[j] * out[j];
}

// The kind's backward: the score gradient from the weights' gradient ga and the weights a.
template <int N> static inline Vec<N> weights_grad(int kind, const Vec<N> &ga, const Vec<N> &a, int i) {
    if (kind == 0) return a * (ga - hsum(ga * a));
    const real div = i > 1 ? i : 1;
    return select(a > 0, ga / div, Vec<N>{});
}

// A block of R score rows: one head h, the queries i0 .. i0 + R - 1 (so that each weight row
// loaded from memory serves R rows); row j is r = (i0 + j) * H + h of the pattern.
struct Block {
    int h, i0, keys;  // keys = i0 + R: the keys any of its queries sees
    int64_t row0;  // the pattern row of j = 0 in the whole [S*B*L*H] rows
    int64_t stride;  // = H: pattern rows between j and j + 1
    int64_t row(int j) const { return row0 + j * stride; }
};

// out_j = sum_e v_(i0+j),e W[e][h*D ..]: the block's rows of v (x or gout) through head h's columns
// of W (Gt: y_j = G_h x_(i0+j); MtT: gz_j = M_h^T gout_(i0+j)), each row of W loaded once for R
// rows (one chain per row: with R = 4 on AVX2, two chains spilled and ran 2% slower).
template <int R> static inline void head_map(const real *v, const real *W, int64_t HD, const Block &q, vd out[R]) {
    for (int j = 0; j < R; j++) out[j] = vd{};
    for (int e = 0; e < D; e++) {
        const vd w = load_d(W + e * HD + q.h * D);
        for (int j = 0; j < R; j++) out[j] += v[(q.i0 + j) * D + e] * w;
    }
}

// acc_j += sum_c v_j[c] * rows[c]: R vector-matrix products sharing the D rows (v in memory).
template <int R> static inline void combine_rows(const real v[R][D], const real *rows, vd acc[R]) {
    for (int c = 0; c < D; c++) {
        const vd w = load_d(rows + c * D);
        for (int j = 0; j < R; j++) acc[j] += v[j][c] * w;
    }
}

// One sequence, as the blocks read it: its rows x_k from memory (xn), in registers (X) and
// transposed (XT), and its output's gradient (gon, NULL where the loss reads only the pattern).
struct Sequence { const real *xn, *gon; vd X[L]; vk XT[D]; };

// Per member: G_h^T side by side (G), G_h (GT), M_h^T (M, forward; MT: M_h, backward), HD = H*D.
struct Maps { const real *G, *GT, *M, *MT; int64_t HD; };

// The forward of one block of R rows: its pattern rows to a, M_h z_j added to OUT[i0 + j]; N:
// the keys it computes (its queries see none after them: the pattern's rows are 0 there).
template <int R, int N> static void forward_block(int kind, const Block &q, const Sequence &x, const Maps &w,
                                                  real *__restrict a, vd OUT[L]) {
    vd yv[R];
    head_map<R>(x.xn, w.G, w.HD, q, yv);
    real y[R][D], z[R][D];  // in memory: their entries are broadcast
    memcpy(y, yv, sizeof y);
    Vec<N> s[R] = {};
    for (int c = 0; c < D; c++) {
        const Vec<N> xc = first<N>(x.XT[c]);
        for (int j = 0; j < R; j++) s[j] += y[j][c] * xc;
    }
    real p[R][N];  // the block's weights, also stored as the pattern's rows (0 after the first N)
    Vec<N> pv[R];
    weights_rows<R, N>(kind, s, q.i0, pv);
    for (int j = 0; j < R; j++) {
        memcpy(p[j], &pv[j], sizeof pv[j]);
        store<N>(a + q.row(j) * L, pv[j]);
        if constexpr (N < L) store<L - N>(a + q.row(j) * L + N, Vec<L - N>{});
    }
    vd zv[R] = {};
    for (int k = 0; k < q.keys; k++)
        for (int j = 0; j < R; j++) zv[j] += p[j][k] * x.X[k];
    memcpy(z, zv, sizeof z);
    vd o[R] = {};
    combine_rows<R>(z, w.M + q.h * D * D, o);  // M_h z_j: Mt's rows h*D + c
    for (int j = 0; j < R; j++) OUT[q.i0 + j] += o[j];
}

// Shapes, per member m < S: x, out [B, L, D]; Gt [D, H*D] (G_h^T side by side: Gt[e][h*D + c] =
// G_h[c][e]); Mt [H*D, D] (Mt[h*D + c][e] = M_h[e][c]); a [B, L*H, L] (rows: query, head).
extern "C" void layer_forward(int kind, int64_t S, int64_t B, int H, int residual, const real *__restrict x,
                              const real *__restrict Gt, const real *__restrict Mt, real *__restrict a,
                              real *__restrict out) {
    constexpr int R = rows_in_flight(RF);
    const int64_t HD = (int64_t)H * D;
    for (int64_t m = 0; m < S; m++) {
        const Maps w{Gt + m * D * HD, nullptr, Mt + m * HD * D, nullptr, HD};
        for (int64_t b = 0; b < B; b++) {
            const int64_t n = m * B + b;
            Sequence seq{x + n * L * D, nullptr, {}, {}};
            vd OUT[L];
            load_rows(seq.xn, seq.X, seq.XT);
            for (int k = 0; k < L; k++) OUT[k] = residual ? seq.X[k] : vd{};
            for (int h = 0; h < H; h++)
                for (int i0 = 0; i0 < L; i0 += R) {
                    const Block q{h, i0, i0 + R, n * L * H + (int64_t)i0 * H + h, H};
                    if (q.keys <= HALF) forward_block<R, HALF>(kind, q, seq, w, a, OUT);
                    else forward_block<R, L>(kind, q, seq, w, a, OUT);
                }
            for (int k = 0; k < L; k++) store_d(out + n * L * D + k * D, OUT[k]);
        }
    }
}

// The backward of one block of R rows: adds its terms to GX (if want_gx) and to the sequence's
// weight gradients gG (rows h*D + e: gGt[e][h*D ..]) and gM (rows h*D + c: gMt[h*D + c]); N: the
// keys it computes, as forward_block.
template <int R, int N> static void backward_block(int kind, const Block &q, const Sequence &x, const Maps &w,
                                            const real *__restrict a, const real *__restrict gpat, bool want_gx,
                                            vd GX[L], vd *__restrict gG, vd *__restrict gM) {
    const int h = q.h;
    vd yv[R], gzv[R] = {}, zv[R] = {}, gyv[R] = {};
    head_map<R>(x.xn, w.G, w.HD, q, yv);
    if (x.gon) head_map<R>(x.gon, w.MT, w.HD, q, gzv);  // gz_j = M_h^T gout_(i0+j): MtT's rows e at h*D
    real gz[R][D], gy[R][D], gs[R][L];  // in memory: their entries are broadcast
    memcpy(gz, gzv, sizeof gz);
    const real *aj[R];  // the block's pattern rows
    Vec<N> ga[R];
    for (int j = 0; j < R; j++) {
        aj[j] = a + q.row(j) * L;
        ga[j] = gpat ? load<N>(gpat + q.row(j) * L) : Vec<N>{};
    }
    for (int c = 0; c < D; c++) {
        const Vec<N> xc = first<N>(x.XT[c]);
        for (int j = 0; j < R; j++) ga[j] += gz[j][c] * xc;
    }
    for (int j = 0; j < R; j++) {  // gs_jk for k < N (the sums below read k < q.keys <= N)
        const Vec<N> g = weights_grad(kind, ga[j], load<N>(aj[j]), q.i0 + j);
        memcpy(gs[j], &g, sizeof g);
    }
    // The sums over keys, one loop per sum: AVX2's 16 registers then hold each one's accumulators
    // (in one loop they spilled: 1.13x slower there, the same with AVX-512).
    if (x.gon)
        for (int k = 0; k < q.keys; k++)
            for (int j = 0; j < R; j++) zv[j] += aj[j][k] * x.X[k];
    for (int k = 0; k < q.keys; k++)
        for (int j = 0; j < R; j++) gyv[j] += gs[j][k] * x.X[k];
    if (want_gx)
        for (int k = 0; k < q.keys; k++) {
            vd gk = GX[k];
            for (int j = 0; j < R; j++) gk += aj[j][k] * gzv[j] + gs[j][k] * yv[j];
            GX[k] = gk;
        }
    memcpy(gy, gyv, sizeof gy);
    if (x.gon) {  // gMt[h*D + c] += z_j[c] gout_(i0+j)
        real z[R][D];
        memcpy(z, zv, sizeof z);
        vd go[R];
        for (int j = 0; j < R; j++) go[j] = load_d(x.gon + (q.i0 + j) * D);
        for (int c = 0; c < D; c++) {
            vd acc = gM[h * D + c];
            for (int j = 0; j < R; j++) acc += z[j][c] * go[j];
            gM[h * D + c] = acc;
        }
    }
    for (int e = 0; e < D; e++) {  // gGt[e][h*D ..] += x_(i0+j),e gy_j
        vd acc = gG[h * D + e];
        for (int j = 0; j < R; j++) acc += x.xn[(q.i0 + j) * D + e] * gyv[j];
        gG[h * D + e] = acc;
    }
    if (want_gx) {
        vd gq[R] = {};
        combine_rows<R>(gy, w.GT + h * D * D, gq);  // G_h^T gy_j: GtT's rows h*D + c
        for (int j = 0; j < R; j++) GX[q.i0 + j] += gq[j];
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
    constexpr int R = rows_in_flight(RBW);
    const int64_t HD = (int64_t)H * D;
    std::vector<vd> gG_seq(HD), gM_seq(HD), gG_all(HD), gM_all(HD);  // rows of gGt / gMt by (h, c)
    for (int64_t m = 0; m < S; m++) {
        const Maps w{Gt + m * D * HD, GtT + m * HD * D, nullptr, MtT + m * D * HD, HD};
        for (auto *v : {&gG_all, &gM_all}) for (auto &r : *v) r = vd{};
        for (int64_t b = 0; b < B; b++) {
            const int64_t n = m * B + b;
            Sequence seq{x + n * L * D, gout ? gout + n * L * D : nullptr, {}, {}};
            vd GX[L];
            load_rows(seq.xn, seq.X, seq.XT);
            for (int k = 0; k < L; k++) GX[k] = (seq.gon && residual) ? load_d(seq.gon + k * D) : vd{};
            for (auto *v : {&gG_seq, &gM_seq}) for (auto &r : *v) r = vd{};
            for (int h = 0; h < H; h++)
                for (int i0 = 0; i0 < L; i0 += R) {
                    const Block q{h, i0, i0 + R, n * L * H + (int64_t)i0 * H + h, H};
                    if (q.keys <= HALF)
                        backward_block<R, HALF>(kind, q, seq, w, a, gpat, gx != nullptr, GX, gG_seq.data(), gM_seq.data());
                    else
                        backward_block<R, L>(kind, q, seq, w, a, gpat, gx != nullptr, GX, gG_seq.data(), gM_seq.data());
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
