/* The two inner loops of the trigger bounds (proofs/certify/trigger_dual.py, trigger_vertices.py),
 * compiled for the host by proofs/certify/native.py. Plain IEEE double arithmetic: no -ffast-math,
 * no contraction of a * b + c into one rounding (-ffp-contract=off), so every operation is the
 * rounded operation of the numpy code it replaces and the same a-priori rounding allowance covers
 * it (Higham's bounds hold in any order of summation). The numpy code stays the reference: the
 * tests hold these to it.
 *
 * dual_min: trigger_dual.dual_min, the dual bound on one key's maximum, per element and slice:
 * the breakpoints of both slice ends and 0 (and one far candidate each side) sorted together,
 * each end's dual at every candidate from prefix sums, crossings of the two ends between
 * consecutive candidates, the smallest of the larger end.
 *
 * screen_cells: trigger_vertices.Row._cells, the bound at (cell, point) pairs with lambda per
 * pair and mu per cell (optionally moved with lambda): l1 norms of affine functions of beta(q). */

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

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

/* trigger_dual.dual_min: per element b and slice s, slice_min; the largest over the slices. beta
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
