/* The two inner loops of the trigger bounds (proofs/certify/head/trigger/dual.py, vertices.py),
 * compiled for the host by native.py (this folder). Plain IEEE double arithmetic: no -ffast-math,
 * no contraction of a * b + c into one rounding (-ffp-contract=off), so every operation is the
 * rounded operation of the numpy code it replaces and the same a-priori rounding allowance covers
 * it (Higham's bounds hold in any order of summation). The numpy code stays the reference: the
 * tests hold these to it.
 *
 * dual_min: trigger.dual.dual_min, the dual bound on one key's maximum, per element and slice:
 * the breakpoints of both slice ends and 0 (and one far candidate each side) sorted together,
 * each end's dual at every candidate from prefix sums, crossings of the two ends between
 * consecutive candidates, the smallest of the larger end.
 *
 * screen_cells: trigger.vertices.Row._cells, the bound at (cell, point) pairs with lambda per
 * pair and mu per cell (optionally moved with lambda): l1 norms of affine functions of beta(q).
 *
 * bound_over: trigger.grid.bound_over's search over the refined grid (at the end of this file). */

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static double dmax(double a, double b) { return a > b ? a : b; }

/* One slice of one element: returns the minimum over mu of max(G_0, G_1), G_k(mu) = alpha0 +
 * alpha1 y_k + mu T_k(mu) + sum_l |y_k g_l + h_l - mu beta_l| + |mu| eps with T_k = tn_k for
 * mu <= 0 and tp_k for mu > 0; *size_out the largest absolute sum met there, *mu_out the
 * minimiser. xs, w0s, w1s: work space of 2n + 3. */
static double slice_min(int n, const double *beta, double eps, double alpha0, double alpha1, const double *g,
                        const double *h, const double y[2], const double tn[2], const double tp[2],
                        double *xs, double *w0s, double *w1s, double *size_out, double *mu_out) {
    int K = 2 * n + 3, i, k, l;
    double W = 0.0, S[2] = {0.0, 0.0}, C[2] = {0.0, 0.0}, absA[2] = {0.0, 0.0}, far = 0.0, sg = 0.0, sh = 0.0;
    for (l = 0; l < n; ++l) { W += fabs(beta[l]); sg += fabs(g[l]); sh += fabs(h[l]); }
    for (k = 0; k < 2; ++k)
        for (l = 0; l < n; ++l) {
            double A = g[l] * y[k] + h[l];
            double x = beta[l] != 0.0 ? A / beta[l] : 0.0;
            double wl = fabs(beta[l]);
            absA[k] += fabs(A);
            if (beta[l] == 0.0) C[k] += fabs(A);
            S[k] += wl * x;
            xs[k * n + l] = x;
            w0s[k * n + l] = k == 0 ? wl : 0.0;
            w1s[k * n + l] = k == 1 ? wl : 0.0;
            if (fabs(x) > far) far = fabs(x);
        }
    /* beyond the outermost breakpoints both ends are linear: their crossing is within this reach */
    double dY = fabs(y[1] - y[0]), dT = fabs(tn[1] - tn[0]) < fabs(tp[1] - tp[0]) ? fabs(tn[1] - tn[0]) : fabs(tp[1] - tp[0]);
    double ratio = dT > 0 ? dY / dT : 1e300;
    far = 2 * (fabs(alpha1) + sg + sh) * ratio + 1 + 2 * far;
    if (far > 1e300) far = 1e300;
    xs[2 * n] = 0.0; xs[2 * n + 1] = -far; xs[2 * n + 2] = far;
    for (i = 2 * n; i < K; ++i) w0s[i] = w1s[i] = 0.0;
    for (i = 1; i < K; ++i) {  /* insertion sort of the candidates, weights alongside */
        double x = xs[i], a = w0s[i], b = w1s[i];
        int j = i - 1;
        while (j >= 0 && xs[j] > x) { xs[j + 1] = xs[j]; w0s[j + 1] = w0s[j]; w1s[j + 1] = w1s[j]; --j; }
        xs[j + 1] = x; w0s[j + 1] = a; w1s[j + 1] = b;
    }
    double bw[2] = {0.0, 0.0}, bs[2] = {0.0, 0.0}, best = INFINITY, best_size = 0.0, best_mu = 0.0;
    double prevG0 = 0.0, prevD = 0.0, prevMu = 0.0, prevSize = 0.0;
    for (i = 0; i < K; ++i) {
        double mu = xs[i], G[2], sz[2];
        bw[0] += w0s[i]; bs[0] += w0s[i] * mu;
        bw[1] += w1s[i]; bs[1] += w1s[i] * mu;
        for (k = 0; k < 2; ++k) {
            double inner = mu * (2 * bw[k] - W) - 2 * bs[k] + S[k] + C[k];
            double T = mu <= 0 ? mu * tn[k] : mu * tp[k];
            G[k] = alpha0 + alpha1 * y[k] + T + inner + fabs(mu) * eps;
            sz[k] = fabs(alpha0) + fabs(alpha1) * y[k] + fabs(T) + fabs(mu) * (1 + eps + W) + absA[k];
        }
        double top = dmax(G[0], G[1]), size = dmax(sz[0], sz[1]), D = G[0] - G[1];
        if (top < best) { best = top; best_size = size; best_mu = mu; }
        if (i > 0 && prevD * D < 0) {  /* both ends linear between the two candidates: their crossing */
            double t = prevD / (prevD - D);
            double at = prevG0 + t * (G[0] - prevG0);
            if (at < best) { best = at; best_size = dmax(prevSize, size); best_mu = prevMu + t * (mu - prevMu); }
        }
        prevG0 = G[0]; prevD = D; prevMu = mu; prevSize = size;
    }
    if (fabs(best_mu) >= far) {  /* the dual falls without bound: no content reaches the slice */
        best = -INFINITY;
        best_size = 0.0;
    }
    *size_out = best_size;
    *mu_out = best_mu;
    return best;
}

/* trigger.dual.dual_min: per element b and slice s, slice_min; the largest over the slices. beta
 * [B, n] (beta_per) or [n]; Y, Tn, Tp [B, S, 2] (slices_per) or [S, 2]; mu may be NULL. */
void dual_min(long B, int n, int S, int beta_per, int slices_per, const double *beta, double eps,
              const double *alpha0, const double *alpha1, const double *g, const double *h,
              const double *Y, const double *Tn, const double *Tp, double *best, double *size, double *mu) {
    double xs[2 * 64 + 3], w0s[2 * 64 + 3], w1s[2 * 64 + 3];
    if (n > 64) return;
    for (long b = 0; b < B; ++b) {
        const double *bt = beta_per ? beta + b * n : beta, *gb = g + b * n, *hb = h + b * n;
        long off = slices_per ? b * S * 2 : 0;
        double top = -INFINITY, big = -INFINITY;
        for (int s = 0; s < S; ++s) {
            double sz, m;
            double v = slice_min(n, bt, eps, alpha0[b], alpha1[b], gb, hb, Y + off + 2 * s, Tn + off + 2 * s,
                                 Tp + off + 2 * s, xs, w0s, w1s, &sz, &m);
            if (v > top) top = v;
            if (sz > big) big = sz;
            if (mu) mu[b * S + s] = m;
        }
        best[b] = top;
        size[b] = big;
    }
}

/* Per (cell c, point p): max over the cell's two ends of P(q) + lambda D + m (K - s t_f / j), the
 * key maximum K through fixed multipliers mu (moved by ym (lambda - lam_ref) when lam_ref is
 * given). Arrays row-major: L, out [C, P]; mu [2, C, S]; betaT [n, P]. row: m, s, j, v0, vf, tf, eps, U.
 * The points are the inner loop (contiguous, so it vectorises); every point's sums are taken in
 * the same order as numpy's. Returns the largest absolute sum met (for the rounding allowance), or
 * -1 when out of memory. */
double screen_cells(int C, long P, int n, int S, const double *Xa, const double *Xb, const double *L,
                    const double *mu, const double *lam_ref, const double *Wlo, const double *Whi,
                    const double *w0lo, const double *w0hi, const double *wolo, const double *wohi,
                    const double *vo, const double *to, const double *betaT, const double *vC, const double *hh,
                    const double *row, const double *y, const double *edges, const double *ym, double *out) {
    double m = row[0], s = row[1], j = row[2], v0 = row[3], vf = row[4], tf = row[5], eps = row[6], U = row[7];
    double absvC = 0.0, abshh = 0.0, size = 0.0;
    for (int l = 0; l < n; ++l) { absvC += fabs(vC[l]); abshh += fabs(hh[l]); }
    double *rho = malloc(sizeof(double) * P * 5);
    if (!rho) return -1.0;
    double *base = rho + P, *alpha = rho + 2 * P, *K = rho + 3 * P, *acc = rho + 4 * P;
    for (int c = 0; c < C; ++c) {
        const double *Lc = L + c * P;
        double *o = out + c * P;
        for (long p = 0; p < P; ++p) o[p] = -INFINITY;
        for (int e = 0; e < 2; ++e) {
            double r_max = 0.0, l_max = 0.0, r_min = INFINITY, dl_max = 0.0;
            for (long p = 0; p < P; ++p) {
                double Da = Wlo[p] + m * Xa[c], Db = Whi[p] + m * Xb[c], rm = 2 / (Da + Db), r = 1 / (e == 0 ? Da : Db);
                double Lp = Lc[p], Lt = Lp >= 0 ? Lp / r : Lp / rm - Lp * (r - rm) / (rm * rm);
                double a0 = s * v0 * r - Lp, ao = s * r * vo[p] - Lp;
                rho[p] = r;
                base[p] = dmax(a0 * w0lo[p], a0 * w0hi[p]) + dmax(ao * wolo[p], ao * wohi[p]) - s * to[p] / j + Lt
                          - m * s * tf / j;
                alpha[p] = s * vf * r - Lp;
                K[p] = -INFINITY;
                r_max = dmax(r_max, r);
                r_min = r < r_min ? r : r_min;
                l_max = dmax(l_max, fabs(Lp));
                if (lam_ref) dl_max = dmax(dl_max, fabs(Lp - lam_ref[c]));
            }
            for (int sl = 0; sl < S; ++sl) {
                double mu0 = mu[(e * C + c) * S + sl], lt = log(ym[sl]), ys = ym[sl], lr = lam_ref ? lam_ref[c] : 0.0;
                for (int end = 0; end < 2; ++end) {
                    double ye = y[sl + end], le = edges[sl + end], te = lt + (ye - ys) / ys;
                    for (long p = 0; p < P; ++p) {
                        double mc = lam_ref ? mu0 + ys * (Lc[p] - lr) : mu0;
                        double T = mc <= 0 ? mc * le : mc * te;
                        acc[p] = alpha[p] * ye + T + fabs(mc) * eps;
                    }
                    for (int l = 0; l < n; ++l) {
                        double coef = s * vC[l] * ye, hl = hh[l];
                        const double *bl = betaT + l * P;
                        if (lam_ref)
                            for (long p = 0; p < P; ++p) acc[p] += fabs(rho[p] * coef + hl - (mu0 + ys * (Lc[p] - lr)) * bl[p]);
                        else
                            for (long p = 0; p < P; ++p) acc[p] += fabs(rho[p] * coef + hl - mu0 * bl[p]);
                    }
                    for (long p = 0; p < P; ++p) K[p] = acc[p] > K[p] ? acc[p] : K[p];
                    /* the largest absolute sum met, from the maxima of its parts over the points */
                    double mc_max = fabs(mu0) + ys * dl_max, T_max = mc_max * dmax(fabs(le), fabs(te));
                    double big = (fabs(vf) * r_max + l_max) * ye + T_max + mc_max * (1 + eps + U) + absvC * r_max * ye + abshh;
                    size = dmax(size, m * (big + 1) + l_max / r_min * 3);
                }
            }
            for (long p = 0; p < P; ++p) o[p] = dmax(o[p], base[p] + m * K[p]);
        }
    }
    free(rho);
    return size;
}

/* bound_over: trigger.grid.bound_over's depth-first search over the refined grid, the same
 * operations in the same order as the numpy code (trigger.grid._search, the reference): a node's
 * cheap bound base + max U + tail[k] + room; a leaf's refined grid built axis by axis from the last
 * (a middle is ((a + b) * 0.5) + kappa w w / 4), plus base; children ordered by their bound, ties
 * in order (ends, then middles: Python's stable sort); a middle child's array (a + b) / 2. The hot
 * entries are kept as the stable order of all of them would keep the first HOT of them: by value,
 * larger first, ties in the order they were found. */

typedef struct {
    int n, hot_max, hot_count, where_set;
    const long *shape;
    const double *widths, *kappa, *adds, *tail;
    double target, leaf, room, figure;
    int *path, *where, *hot_idx, *rank;
    double *hot_vals, *grid_a, *grid_b;
    long grid_cap;
    double **child;  /* per depth: a middle child's array */
} Search;

static void keep_hot(Search *s, double value, const int *idx) {
    int pos = s->hot_count, m, n = s->n;
    while (pos > 0 && s->hot_vals[pos - 1] < value) --pos;  /* after every entry >= value: stable */
    if (pos >= s->hot_max) return;
    m = s->hot_count < s->hot_max ? s->hot_count : s->hot_max - 1;
    memmove(s->hot_vals + pos + 1, s->hot_vals + pos, (size_t)(m - pos) * sizeof(double));
    memmove(s->hot_idx + (long)(pos + 1) * n, s->hot_idx + (long)pos * n, (size_t)(m - pos) * n * sizeof(int));
    s->hot_vals[pos] = value;
    memcpy(s->hot_idx + (long)pos * n, idx, (size_t)n * sizeof(int));
    if (s->hot_count < s->hot_max) ++s->hot_count;
}

/* the leaf: refined grid of U (axes k..n-1), returns -1 on out of memory */
static int leaf(Search *s, const double *U, long size, double base, int k) {
    int nd = s->n - k, ax, i, j;
    long cur = size, dims[64], full = 1;
    for (i = 0; i < nd; ++i) { dims[i] = s->shape[k + i]; full *= 2 * dims[i] - 1; }
    if (full > s->grid_cap) {
        free(s->grid_a); free(s->grid_b);
        s->grid_a = malloc((size_t)full * sizeof(double)); s->grid_b = malloc((size_t)full * sizeof(double));
        s->grid_cap = full;
        if (!s->grid_a || !s->grid_b) { s->grid_cap = 0; return -1; }
    }
    double *g = s->grid_a, *o = s->grid_b;
    memcpy(g, U, (size_t)size * sizeof(double));
    for (ax = nd - 1; ax >= 0; --ax) {  /* the last axes first, as grid_values */
        long pre = 1, post = 1, L = dims[ax], p, q, t;
        for (i = 0; i < ax; ++i) pre *= dims[i];
        for (i = ax + 1; i < nd; ++i) post *= dims[i];
        double w = s->widths[k + ax], term = s->kappa[k + ax] * w * w / 4;
        for (p = 0; p < pre; ++p)
            for (t = 0; t < 2 * L - 1; ++t) {
                double *dst = o + (p * (2 * L - 1) + t) * post;
                const double *e0 = g + (p * L + t / 2) * post;
                if (t % 2 == 0) memcpy(dst, e0, (size_t)post * sizeof(double));
                else for (q = 0; q < post; ++q) dst[q] = ((e0[q] + e0[post + q]) * 0.5) + term;
            }
        dims[ax] = 2 * L - 1;
        cur = pre * (2 * L - 1) * post;
        double *tmp = g; g = o; o = tmp;
    }
    long top = 0, e;
    for (e = 0; e < cur; ++e) g[e] = g[e] + base;
    for (e = 1; e < cur; ++e) if (g[e] > g[top]) top = e;
    double best = g[top];
    if (best + s->room > s->figure) {
        long r = top;
        for (i = 0; i < k; ++i) s->where[i] = s->path[i];
        for (i = nd - 1; i >= 0; --i) { s->where[k + i] = (int)(r % dims[i]); r /= dims[i]; }
        s->where_set = 1;
    }
    s->figure = dmax(s->figure, best + s->room);
    if (best > s->target - s->room) {
        /* the entries above target - room, larger first, ties by index: a stable sort's first HOT */
        int idx[64];
        int found = 0;
        long *picked = malloc((size_t)s->hot_max * sizeof(long));
        double *pv = malloc((size_t)s->hot_max * sizeof(double));
        if (!picked || !pv) { free(picked); free(pv); return -1; }
        for (e = 0; e < cur; ++e) {
            double v = g[e];
            if (!(v > s->target - s->room)) continue;
            int pos = found;
            while (pos > 0 && pv[pos - 1] < v) --pos;
            if (pos >= s->hot_max) continue;
            int m = found < s->hot_max ? found : s->hot_max - 1;
            memmove(pv + pos + 1, pv + pos, (size_t)(m - pos) * sizeof(double));
            memmove(picked + pos + 1, picked + pos, (size_t)(m - pos) * sizeof(long));
            pv[pos] = v; picked[pos] = e;
            if (found < s->hot_max) ++found;
        }
        for (j = 0; j < found; ++j) {
            long r = picked[j];
            for (i = 0; i < k; ++i) idx[i] = s->path[i];
            for (i = nd - 1; i >= 0; --i) { idx[k + i] = (int)(r % dims[i]); r /= dims[i]; }
            keep_hot(s, pv[j], idx);
        }
        free(picked); free(pv);
    }
    return 0;
}

static int visit(Search *s, const double *U, double base, int k) {
    long size = 1, e, i;
    int j;
    for (j = k; j < s->n; ++j) size *= s->shape[j];
    double umax = U[0];
    for (e = 1; e < size; ++e) if (U[e] > umax) umax = U[e];
    double cheap = base + umax + s->tail[k] + s->room;
    if (cheap <= dmax(s->target, s->figure)) { s->figure = dmax(s->figure, cheap); return 0; }
    if ((double)size * pow(1.5, s->n - k) <= s->leaf || k == s->n) return leaf(s, U, size, base, k);
    long L = s->shape[k], slab = size / L;
    double top[64], ub[127], b[127];
    int order[127], c, m = (int)(2 * L - 1);
    for (i = 0; i < L; ++i) {
        double t = U[i * slab];
        for (e = 1; e < slab; ++e) if (U[i * slab + e] > t) t = U[i * slab + e];
        top[i] = t;
    }
    for (i = 0; i < L; ++i) { ub[i] = base + top[i]; b[i] = base; }
    for (i = 0; i + 1 < L; ++i) { ub[L + i] = base + s->adds[k] + ((top[i] + top[i + 1]) / 2); b[L + i] = base + s->adds[k]; }
    for (c = 0; c < m; ++c) {  /* stable insertion sort by -ub */
        int t = c;
        while (t > 0 && ub[order[t - 1]] < ub[c]) { order[t] = order[t - 1]; --t; }
        order[t] = c;
    }
    for (c = 0; c < m; ++c) {
        int ch = order[c];
        if (ub[ch] + s->tail[k + 1] + s->room <= dmax(s->target, s->figure)) {
            s->figure = dmax(s->figure, ub[ch] + s->tail[k + 1] + s->room);
            break;
        }
        const double *child;
        if (ch < L) { child = U + ch * slab; s->path[k] = 2 * ch; }
        else {
            long a = ch - L;
            double *buf = s->child[k];
            for (e = 0; e < slab; ++e) buf[e] = (U[a * slab + e] + U[(a + 1) * slab + e]) / 2;
            child = buf;
            s->path[k] = (int)(2 * a + 1);
        }
        if (visit(s, child, b[ch], k + 1) < 0) return -1;
    }
    return 0;
}

/* Returns the figure (NaN on bad shapes or out of memory); where[n] with *where_set, and the hot
 * entries: *hot_count values (larger first) and their refined-grid indices hot_idx[count][n]. */
double bound_over(int n, const long *shape, const double *values, const double *widths, const double *kappa,
                  const double *adds, const double *tail, double room, double target, double leaf_size, int hot_max,
                  double *hot_vals, int *hot_idx, int *hot_count, int *where, int *where_set) {
    Search s;
    int k, ok = n >= 0 && n <= 64 && hot_max >= 1;
    long size = 1;
    for (k = 0; ok && k < n; ++k) { ok = shape[k] >= 1 && shape[k] <= 64; size *= shape[k]; }
    *hot_count = 0; *where_set = 0;
    if (!ok) return NAN;
    memset(&s, 0, sizeof s);
    s.n = n; s.shape = shape; s.widths = widths; s.kappa = kappa; s.adds = adds; s.tail = tail;
    s.room = room; s.target = target; s.leaf = leaf_size; s.figure = -INFINITY; s.hot_max = hot_max;
    s.hot_vals = hot_vals; s.hot_idx = hot_idx; s.where = where;
    s.path = calloc((size_t)n + 1, sizeof(int));
    s.child = calloc((size_t)n + 1, sizeof(double *));
    int failed = !s.path || !s.child;
    long rest = size;
    for (k = 0; !failed && k < n; ++k) {
        rest /= shape[k];
        s.child[k] = malloc((size_t)(rest > 0 ? rest : 1) * sizeof(double));
        failed = !s.child[k];
    }
    if (!failed) failed = visit(&s, values, 0.0, 0) < 0;
    for (k = 0; s.child && k < n; ++k) free(s.child[k]);
    free(s.child); free(s.path); free(s.grid_a); free(s.grid_b);
    *hot_count = s.hot_count;
    *where_set = s.where_set;
    return failed ? NAN : s.figure;
}
