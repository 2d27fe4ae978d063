"""LP-dual (Farkas) certificates, found by HiGHS and checked in exact rationals by this module.

A system of rows a_i . x (<=, <, =) b_i has no real solution if there are multipliers y_i
(y_i >= 0 on inequalities, any sign on equations) with

    sum_i y_i a_i = 0   and   sum_i y_i b_i < 0
                        (or = 0 with y_i > 0 on some strict row).

Adding the rows with those weights gives 0 < 0 (or 0 <= negative), so the check in
``check_infeasible`` needs no trust in any solver: it is a few exact sums over Fractions.

``certified_max`` finds such multipliers for the bound "objective <= V" of an LP: HiGHS
(``scipy.optimize.linprog(method="highs")``) solves it in floating point; its duals are
rationalised and repaired exactly on their support (a small exact linear solve) so that
sum y_i a_i equals the objective's row exactly; V = sum y_i b_i is then an exact, certified
upper bound. Any failure (HiGHS not optimal, a repaired multiplier negative) comes back as a
reason and the caller falls back; nothing here ever calls an unchecked bound proved.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .linear import Row

LP_STATUS = {2: "infeasible", 3: "unbounded"}  # linprog's codes for an LP without an optimum
SUPPORT_TOLS = (1e-9, 1e-7, 1e-5, 1e-11)  # dual entries below this count as 0 (tried in turn)
DENOMINATOR = 10 ** 12  # floats are rationalised to at most this denominator before the repair


@dataclass
class Certificate:
    """Multipliers (row index -> y_i) certifying that ``rows`` are infeasible."""

    multipliers: dict[int, Fraction]

    def as_strings(self) -> dict[str, str]:
        return {str(i): str(y) for i, y in sorted(self.multipliers.items())}


def check_infeasible(rows: list[Row], cert: Certificate) -> bool:
    """Exact check of a Farkas certificate (see the module docstring)."""
    total: dict[str, Fraction] = {}
    rhs, strict_used = Fraction(0), False
    for i, y in cert.multipliers.items():
        if not 0 <= i < len(rows) or not isinstance(y, Fraction):
            return False
        row = rows[i]
        if row.op != "=" and y < 0:
            return False
        if y == 0:
            continue
        for v, c in row.coeffs:
            total[v] = total.get(v, Fraction(0)) + y * c
        rhs += y * row.rhs
        strict_used |= row.op == "<" and y > 0
    if any(c != 0 for c in total.values()):
        return False
    return rhs < 0 or (rhs == 0 and strict_used)


def _highs_duals(rows: list[Row], variables: list[str], objective: str):
    """max objective over the closure of ``rows`` with HiGHS: (value, duals by row), or why
    there is no optimum ("infeasible", "unbounded", "failed")."""
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    col = {v: j for j, v in enumerate(variables)}
    groups = {"ub": [i for i, r in enumerate(rows) if r.op != "="], "eq": [i for i, r in enumerate(rows) if r.op == "="]}

    def matrix(idx):
        data = [(k, col[v], float(c)) for k, i in enumerate(idx) for v, c in rows[i].coeffs]
        m = csr_matrix(([d[2] for d in data], ([d[0] for d in data], [d[1] for d in data])), shape=(len(idx), len(variables)))
        return m if idx else None, np.array([float(rows[i].rhs) for i in idx]) if idx else None

    A_ub, b_ub = matrix(groups["ub"])
    A_eq, b_eq = matrix(groups["eq"])
    cost = np.zeros(len(variables))
    cost[col[objective]] = -1.0  # linprog minimises
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(None, None), method="highs")
    if res.status != 0:
        return LP_STATUS.get(res.status, "failed")
    duals = {}
    for name, marg in (("ub", res.ineqlin.marginals if A_ub is not None else []),
                       ("eq", res.eqlin.marginals if A_eq is not None else [])):
        for i, m in zip(groups[name], marg):
            duals[i] = -float(m)  # multiplier of row i in  sum y_i a_i = e_objective
    return -res.fun, duals


def _solve_exact(columns: dict[int, dict[str, Fraction]], target: dict[str, Fraction]) -> dict[int, Fraction] | None:
    """Some solution z of sum_i z_i columns[i] = target (Gauss-Jordan over Fractions), None if
    inconsistent. Unknowns without a pivot are 0."""
    names = sorted({v for c in columns.values() for v in c} | set(target))
    keys = list(columns)
    matrix = [[columns[k].get(v, Fraction(0)) for k in keys] + [target.get(v, Fraction(0))] for v in names]
    pivots, r = [], 0
    for j in range(len(keys)):
        p = next((i for i in range(r, len(matrix)) if matrix[i][j] != 0), None)
        if p is None:
            continue
        matrix[r], matrix[p] = matrix[p], matrix[r]
        lead = matrix[r][j]
        matrix[r] = [x / lead for x in matrix[r]]
        for i in range(len(matrix)):
            if i != r and matrix[i][j] != 0:
                f = matrix[i][j]
                matrix[i] = [a - f * b for a, b in zip(matrix[i], matrix[r])]
        pivots.append(j)
        r += 1
    if any(row[-1] != 0 for row in matrix[r:]):
        return None
    return {keys[j]: matrix[i][-1] for i, j in enumerate(pivots)}


def _repaired(rows: list[Row], duals: dict[int, float], objective: str, tol: float) -> dict[int, Fraction] | None:
    """Exact multipliers near ``duals`` with sum y_i a_i = e_objective, y >= 0 on inequalities."""
    scale = max([abs(d) for d in duals.values()] + [1.0])
    support = [i for i, d in duals.items() if abs(d) > tol * scale]
    y = {i: Fraction(duals[i]).limit_denominator(DENOMINATOR) for i in support}
    residual = {objective: Fraction(1)}
    for i in support:
        for v, c in rows[i].coeffs:
            residual[v] = residual.get(v, Fraction(0)) - y[i] * c
    residual = {v: c for v, c in residual.items() if c != 0}
    if residual:
        fix = _solve_exact({i: dict(rows[i].coeffs) for i in support}, residual)
        if fix is None:
            return None
        y = {i: y[i] + fix.get(i, Fraction(0)) for i in support}
    if any(rows[i].op != "=" and yi < 0 for i, yi in y.items()):
        return None
    return {i: yi for i, yi in y.items() if yi != 0}


def certified_max(rows: list[Row], objective: str) -> tuple[Fraction, dict[int, Fraction], float] | str:
    """(V, y, HiGHS's float optimum): sup objective <= V over the closure of ``rows``, with
    exact multipliers y (sum y_i a_i = e_objective, V = sum y_i b_i). Otherwise why not:
    "unbounded" / "infeasible" (HiGHS: no optimum, so no bound to certify), "failed" (HiGHS
    stopped otherwise) or "not repaired" (no exact multipliers found near HiGHS's duals)."""
    variables = sorted({v for r in rows for v, _ in r.coeffs} | {objective})
    found = _highs_duals(rows, variables, objective)
    if isinstance(found, str):
        return found
    value, duals = found
    for tol in SUPPORT_TOLS:
        y = _repaired(rows, duals, objective, tol)
        if y is not None:
            return sum((yi * rows[i].rhs for i, yi in y.items()), Fraction(0)), y, value
    return "not repaired"


def bound_certificate(y: dict[int, Fraction], bound_row: int) -> Certificate:
    """The Farkas certificate of  rows + [objective >= bound]  from bound multipliers y: the
    bound row (-objective <= -bound) gets weight 1, which cancels e_objective."""
    return Certificate({**y, bound_row: Fraction(1)})
