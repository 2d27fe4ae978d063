"""SMT encodings of "a softmax head solves the finite instance within eps (max-abs error)".

Token-consistent pattern encoding (the core). A head without positional encoding gives query
type q and key type b the weight exp(s_qb); softmax is shift-invariant, so shift every row by
its BOS score: the BOS key gets E = 1 and every other pair one unknown ``E_q_b > 0``. A class
(q, counts N) then has BOS mass 1/Z with Z = 1 + sum_b N_b E_qb, and its output within eps of
the target y reads, multiplied by Z > 0 so that it is polynomial,

    |u_BOS,c + sum_b N_b E_qb u_b,c - Z y_c| <= eps Z      for every coordinate c.

"BOS mass < theta" is ``theta Z > 1`` (linear in E). Values ``U_b_c`` are the images
W_O W_V x_b. When the K + 2 token vectors are linearly independent (one-hot contents), every
positive E and every value table is realised by some d x d weights (log E is a score matrix of
rank <= K + 2 <= d), so the encoding is exact; otherwise it is a relaxation and UNSAT still
transfers to every real head. Coordinates on which every target is 0 are dropped: setting their
values to 0 satisfies them whatever the weights, so dropping them changes no answer.

Re-parametrised pre-trigger slice (``reparam``): keep the trigger and pre-trigger classes only
(a relaxation: UNSAT transfers) and substitute A = u_BOS + E_TT u_T, w_b = E_Tb u_b,
R_ab = E_ab / E_Tb (a bijection for E > 0), which makes every trigger-class constraint linear.

Lemma chain (``chain``): step 1 is pure linear arithmetic on the trigger classes in the
re-parametrised variables: the box |u_b,c - x_b,c| <= delta_bc, i.e. |w_b,c - E_Tb x_b,c| <=
delta_bc E_Tb, holds (UNSAT of its negation). Step 2 adds the box (implied, so nothing is lost)
to the constraints of one query type and asks, per class, for BOS mass < theta. Dropping the
other classes is a relaxation, so UNSAT transfers; a SAT there only says "inconclusive".
Each step-1 bound is certified by an exact Farkas certificate of ``box_bound_check``'s query
(``farkas``, checked in Fractions), or failing that by z3's UNSAT (``chain``).
"""

from __future__ import annotations

from fractions import Fraction

from .classes import PRE, TRIG, PositionClass, class_target, enumerate_classes
from .instance import BOS, Instance
from .smt2 import ZERO, Script, abs_le, add, le, lt, mul, num, scale, sub

# ---- names ---------------------------------------------------------------------------------


def e_name(q: int, b: int) -> str:
    return f"E_{q}_{b}"


def u_name(b: int, c: int) -> str:
    return f"U_{b}_{c}"


def kept_coords(inst: Instance) -> list[int]:
    """Coordinates on which some target can be nonzero."""
    images = [inst.mean_image(t) for t in inst.query_types]
    if inst.bos_in_mean:
        images.append(inst.token_vectors()[BOS])
    return [c for c in range(inst.d) if any(v[c] != 0 for v in images)]


def value(inst: Instance, script: Script, b: int, c: int) -> str:
    if b == BOS and inst.bos_value == "zero":
        return ZERO
    return script.real(u_name(b, c))


def bos_row_facts(inst: Instance, script: Script, eps: Fraction, coords: list[int]) -> None:
    """The BOS query sees only itself: its output is u_BOS and its target is 0."""
    if inst.bos_value == "row":
        for c in coords:
            script.add(*abs_le(value(inst, script, BOS, c), num(eps)))


def output_facts(y: list[Fraction], eps: Fraction, Z: str, outputs: dict[int, str]) -> list[str]:
    """|out_c - y_c Z| <= eps Z for every kept coordinate (everything already multiplied by Z)."""
    facts = []
    for c, out in outputs.items():
        facts += abs_le(sub(out, scale(y[c], Z)), scale(eps, Z))
    return facts


def positive(script: Script, name: str) -> str:
    script.real(name)
    script.add(f"(> {name} 0.0)")
    return name


# ---- token-consistent pattern encoding (original variables) --------------------------------


def weight(script: Script, q: int, b: int, slot: bool = False) -> str:
    """E_qb; the BOS key has E = 1 after the shift, except for a "slot" kind (softmax1,
    sink_logit: weights E / (1 + sum E), not shift-invariant), where E_q,BOS is free too."""
    return "1.0" if b == BOS and not slot else positive(script, e_name(q, b))


def normaliser(script: Script, cls: PositionClass, slot: bool = False) -> str:
    """Z = [1 +] E_q,BOS + sum_b N_b E_qb (the 1 is the slot of a slot kind)."""
    return add(*(["1.0"] if slot else []), weight(script, cls.query, BOS, slot),
               *[scale(n, weight(script, cls.query, b)) for b, n in enumerate(cls.counts, start=1) if n])


def pattern_class_facts(inst: Instance, script: Script, cls: PositionClass, eps: Fraction, coords: list[int],
                        slot: bool = False) -> None:
    Z = normaliser(script, cls, slot)
    outputs = {}
    for c in coords:
        terms = [mul(weight(script, cls.query, BOS, slot), value(inst, script, BOS, c))]
        terms += [mul(scale(n, weight(script, cls.query, b)), value(inst, script, b, c))
                  for b, n in enumerate(cls.counts, start=1) if n]
        outputs[c] = add(*terms)
    script.add(*output_facts(class_target(inst, cls), eps, Z, outputs))


def box_facts(inst: Instance, script: Script, box: dict) -> None:
    """lo <= u_b,c - x_b,c <= hi (a proved lemma, added as a hint; None = no bound)."""
    x = inst.token_vectors()
    for (b, c), (lo, hi) in box.items():
        d = sub(value(inst, script, b, c), num(x[b][c]))
        if lo is not None:
            script.add(f"(<= {num(lo)} {d})")
        if hi is not None:
            script.add(f"(<= {d} {num(hi)})")


def pattern_script(inst: Instance, eps: Fraction, classes: list[PositionClass], box=None, slot: bool = False) -> Script:
    """Constraints of ``classes`` (and the BOS row) in the original variables E, U."""
    script = Script()
    coords = kept_coords(inst)
    bos_row_facts(inst, script, eps, coords)
    for cls in classes:
        pattern_class_facts(inst, script, cls, eps, coords, slot)
    if box:
        box_facts(inst, script, box)
    return script


def ideal_values_script(inst: Instance, eps: Fraction, classes: list[PositionClass], slot: bool = False) -> Script:
    """The pattern encoding with the values fixed to the ideal images (u_b = what b adds to the
    mean, u_BOS = 0): every constraint becomes linear in E. A restriction, not a relaxation:
    SAT here is a genuine head (then replayed); UNSAT proves nothing."""
    script = Script()
    coords = kept_coords(inst)
    bos_mean = inst.token_vectors()[BOS] if inst.bos_in_mean else None
    for cls in classes:
        Z = normaliser(script, cls, slot)
        y = class_target(inst, cls)
        outputs = {}
        for c in coords:
            terms = [scale(bos_mean[c], weight(script, cls.query, BOS, slot))] if bos_mean and bos_mean[c] else []
            terms += [scale(n * inst.mean_image(b)[c], weight(script, cls.query, b))
                      for b, n in enumerate(cls.counts, start=1) if n]
            outputs[c] = add(*terms)
        script.add(*output_facts(y, eps, Z, outputs))
    return script


def ideal_values(inst: Instance) -> dict[int, list[Fraction]]:
    vals = {b: list(inst.mean_image(b)) for b in inst.query_types}
    vals[BOS] = list(inst.token_vectors()[BOS]) if inst.bos_in_mean else [Fraction(0)] * inst.d
    return vals


def violation(inst: Instance, cls: PositionClass, theta: Fraction, slot: bool = False) -> Script:
    """BOS mass < theta at ``cls``: E_q,BOS < theta Z (E_q,BOS = 1 unless slot)."""
    script = Script()
    script.add(lt(weight(script, cls.query, BOS, slot), scale(theta, normaliser(script, cls, slot))))
    return script


def sink_cap(inst: Instance, classes: list[PositionClass], cap: Fraction, slot: bool = False) -> Script:
    """BOS mass <= cap at every class in ``classes`` (positive controls: sink forbidden)."""
    script = Script()
    for cls in classes:
        script.add(le(weight(script, cls.query, BOS, slot), scale(cap, normaliser(script, cls, slot))))
    return script


# ---- re-parametrised pre-trigger slice -------------------------------------------------------


def f_name(b: int) -> str:
    return f"F_{b}"  # E_T,b: the trigger query's weight on key type b


def w_name(b: int, c: int) -> str:
    return f"W_{b}_{c}"  # E_T,b u_b,c


def a_name(c: int) -> str:
    return f"A_{c}"  # u_BOS,c + E_TT u_T,c


def r_name(a: int, b: int) -> str:
    return f"R_{a}_{b}"  # E_ab / E_Tb


def trigger_class_linear(inst: Instance, script: Script, cls: PositionClass, eps: Fraction,
                         coords: list[int], bos: str = "1.0") -> None:
    """A trigger class in (A, w, F): linear. ``bos`` is the BOS weight (a variable t in the
    Charnes-Cooper scaled LP, 1 otherwise)."""
    T = inst.trigger
    Z = add(bos, *[scale(n, positive(script, f_name(b))) for b, n in enumerate(cls.counts, start=1) if n])
    outputs = {}
    for c in coords:
        terms = [script.real(a_name(c))]
        terms += [scale(n, script.real(w_name(b, c))) for b, n in enumerate(cls.counts, start=1) if n and b != T]
        outputs[c] = add(*terms)
    script.add(*output_facts(class_target(inst, cls), eps, Z, outputs))


def reparam_pre_class(inst: Instance, script: Script, cls: PositionClass, eps: Fraction, coords: list[int]) -> str:
    """A pre-trigger class in (R, w, F, u_BOS); returns its normaliser."""
    a = cls.query
    ratios = {b: positive(script, r_name(a, b)) for b, n in enumerate(cls.counts, start=1) if n}
    Z = add("1.0", *[scale(cls.count(b), mul(r, positive(script, f_name(b)))) for b, r in ratios.items()])
    outputs = {}
    for c in coords:
        terms = [value(inst, script, BOS, c)]
        terms += [scale(cls.count(b), mul(r, script.real(w_name(b, c)))) for b, r in ratios.items()]
        outputs[c] = add(*terms)
    script.add(*output_facts(class_target(inst, cls), eps, Z, outputs))
    return Z


def _need_one_trigger(inst: Instance) -> None:
    if inst.max_triggers != 1:
        raise ValueError("the re-parametrisation needs exactly one trigger per sequence")


def trigger_rows_script(inst: Instance, eps: Fraction) -> Script:
    """Only the trigger-query classes, any number of triggers, in the variables B = u_BOS,
    V = E_TT u_T, w_b = E_Tb u_b, F_b = E_Tb: linear. Dropping the other classes is a
    relaxation, so UNSAT means no head solves the instance at all."""
    script = Script()
    coords = kept_coords(inst)
    bos_row_facts(inst, script, eps, coords)
    T = inst.trigger
    for cls in enumerate_classes(inst):
        if cls.phase(inst) != TRIG:
            continue
        Z = add("1.0", *[scale(n, positive(script, f_name(b))) for b, n in enumerate(cls.counts, start=1) if n])
        outputs = {}
        for c in coords:
            terms = [value(inst, script, BOS, c)]
            terms += [scale(n, script.real(f"V_{c}" if b == T else w_name(b, c))) for b, n in enumerate(cls.counts, start=1) if n]
            outputs[c] = add(*terms)
        script.add(*output_facts(class_target(inst, cls), eps, Z, outputs))
    return script


def trigger_script(inst: Instance, eps: Fraction, bos: str = "1.0") -> Script:
    _need_one_trigger(inst)
    script = Script()
    coords = kept_coords(inst)
    for cls in enumerate_classes(inst):
        if cls.phase(inst) == TRIG:
            trigger_class_linear(inst, script, cls, eps, coords, bos)
    return script


def reparam_script(inst: Instance, eps: Fraction) -> Script:
    """Trigger + pre-trigger classes in the re-parametrised variables (and the BOS row)."""
    script = trigger_script(inst, eps)
    coords = kept_coords(inst)
    bos_row_facts(inst, script, eps, coords)
    for cls in enumerate_classes(inst):
        if cls.phase(inst) == PRE:
            reparam_pre_class(inst, script, cls, eps, coords)
    return script


def reparam_violation(inst: Instance, cls: PositionClass, theta: Fraction) -> Script:
    script = Script()
    Z = add("1.0", *[scale(n, mul(positive(script, r_name(cls.query, b)), positive(script, f_name(b))))
                     for b, n in enumerate(cls.counts, start=1) if n])
    script.add(lt("1.0", scale(theta, Z)))
    return script


# ---- lemma chain, step 1: the value box -----------------------------------------------------


def _box_numerator(inst: Instance, script: Script, b: int, c: int) -> str:
    """E_Tb u_b,c in the re-parametrised variables: w_b,c for a content, A_c - u_BOS,c for T."""
    if b == inst.trigger:
        return sub(script.real(a_name(c)), value(inst, script, BOS, c))
    return script.real(w_name(b, c))


def _scaled_bos_row(inst: Instance, script: Script, eps: Fraction, bos: str) -> None:
    """The BOS row |u_BOS,c| <= eps, scaled by the Charnes-Cooper factor ``bos``."""
    if inst.bos_value == "row":
        for c in kept_coords(inst):
            u = value(inst, script, BOS, c)
            script.add(le(u, scale(eps, bos)), le(f"(- {u})", scale(eps, bos)))


def box_base(inst: Instance, eps: Fraction) -> Script:
    """The part of every box LP of an instance: the trigger classes with the BOS weight t."""
    return trigger_script(inst, eps, bos="t_scale")


def box_lp(inst: Instance, eps: Fraction, b: int, c: int, sign: int, base: Script | None = None) -> Script:
    """Charnes-Cooper form of  sup sign * (u_b,c - x_b,c)  over the trigger classes (b a content
    type or the trigger; for the trigger the BOS row is used too, since E_TT u_T = A - u_BOS).

    With t = 1/E_Tb every variable is scaled by t, the BOS weight 1 becomes t >= 0 and E_Tb
    becomes 1, so the ratio objective is linear: OBJ = sign * (E_Tb u_b,c scaled - x_b,c).
    Closing the strict inequalities (t >= 0) does not change the supremum of a nonempty convex
    set; the bound used in a proof is certified by ``box_bound_check``."""
    t = "t_scale"
    base = box_base(inst, eps) if base is None else base  # ``base``: built once per instance
    script = Script(dict(base.decls), list(base.asserts))
    script.real(t)
    script.asserts = [a.replace("(> F_", "(>= F_") for a in script.asserts]
    script.add(f"(>= {t} 0.0)", f"(= {f_name(b)} 1.0)")
    if b == inst.trigger:
        _scaled_bos_row(inst, script, eps, t)
    x = inst.token_vectors()[b][c]
    obj = sub(_box_numerator(inst, script, b, c), num(x))
    script.real("OBJ")
    script.add(f"(= OBJ {obj if sign > 0 else f'(- {obj})'})")
    return script


def box_bound_check(inst: Instance, eps: Fraction, b: int, c: int, sign: int, bound: Fraction,
                    base: Script | None = None) -> Script:
    """One bound of the box, sign * (u_b,c - x_b,c) <= bound, negated in the closed
    Charnes-Cooper system of ``box_lp``: expected UNSAT. Every head satisfying the trigger
    classes maps into that system (t = 1/E_Tb > 0, everything scaled by t), so UNSAT here
    proves the bound for every head. Being a closed LP (no strict inequalities), it is a
    plain simplex query; the strict original form made z3 stall erratically (seen: 0.4 s or
    a 60 s timeout on the same query)."""
    script = box_lp(inst, eps, b, c, sign, base)
    script.add(f"(>= OBJ {num(bound)})")
    return script


# ---- free pattern (trap F6): no token consistency -------------------------------------------


def free_pattern_script(inst: Instance, eps: Fraction, theta: Fraction, at: PositionClass) -> Script:
    """Every class gets its own simplex point (mass per key type), values are shared. This
    drops token consistency; trap F6 says it admits sink-free 'solutions'."""
    script = Script()
    coords = kept_coords(inst)
    bos_row_facts(inst, script, eps, coords)
    for n_cls, cls in enumerate(enumerate_classes(inst)):
        types = [BOS] + [b for b, n in enumerate(cls.counts, start=1) if n]
        mass = {b: positive(script, f"M_{n_cls}_{b}") for b in types}
        script.add(f"(= {add(*mass.values())} 1.0)")
        outputs = {c: add(*[mul(mass[b], value(inst, script, b, c)) for b in types]) for c in coords}
        script.add(*output_facts(class_target(inst, cls), eps, "1.0", outputs))
        if cls == at:
            script.add(lt(mass[BOS], num(theta)))
    return script


# ---- the convex-hull (pattern) lemma --------------------------------------------------------


def hull_lemma_script(t: int, m: Fraction, beta: Fraction, eps: Fraction) -> Script:
    """Negation of the sink bound a_0 >= (m - eps)/(m + beta) for weights a_0..a_t on the simplex,
    projections p_j >= m (j >= 1), p_0 >= -beta, |sum a_j p_j| <= eps. The products q_j = a_j p_j
    get the valid hints q_j >= m a_j, q_0 >= -beta a_0 (from p_j >= m and a_j >= 0), which is all
    the proof needs, so the query is linear in (a, q): UNSAT for every t."""
    script = Script()
    a = [script.real(f"a_{j}") for j in range(t + 1)]
    q = [script.real(f"q_{j}") for j in range(t + 1)]
    script.add(*[f"(>= {x} 0.0)" for x in a], f"(= {add(*a)} 1.0)")
    script.add(f"(>= {q[0]} {scale(-beta, a[0])})", *[f"(>= {q[j]} {scale(m, a[j])})" for j in range(1, t + 1)])
    script.add(*abs_le(add(*q), num(eps)))
    script.add(lt(scale(m + beta, a[0]), num(m - eps)))
    return script
