(** The convex-hull sink bound (proofs/sink_bound_convex_hull.py, constructions/SPEC.md section 3)
    for every norm: any N with the triangle inequality and absolute homogeneity. With weights on
    the simplex, o = sum_k a_k u_k and delta <= N(p) for every convex combination p of the
    non-BOS images u_1 .. u_n: N(o) >= (1 - a_0) delta - a_0 N(u_0), hence
    a_0 >= (delta - N(o)) / (delta + N(u_0)). *)
Require Import Reals Lra Lia FunctionalExtensionality.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts.
Open Scope R_scope.

Definition vadd (x y : vec) : vec := fun r => x r + y r.
Definition vscale (c : R) (x : vec) : vec := fun r => c * x r.

Definition is_norm (N : vec -> R) : Prop :=
  (forall x y, N (vadd x y) <= N x + N y) /\ (forall c x, N (vscale c x) = Rabs c * N x).

Definition SinkBoundConvexHull : Prop :=
  forall (N : vec -> R) (n : nat) (a : nat -> R) (u : nat -> vec) (delta : R),
  is_norm N -> (forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 -> 0 < delta ->
  (forall b : nat -> R, (forall k, (k < n)%nat -> 0 <= b k) -> sum n b = 1 ->
     delta <= N (combine n b (fun k => u (S k)))) ->
  (1 - a 0%nat) * delta - a 0%nat * N (u 0%nat) <= N (combine (S n) a u) /\
  (delta - N (combine (S n) a u)) / (delta + N (u 0%nat)) <= a 0%nat.

Lemma norm_nonneg : forall N x, is_norm N -> 0 <= N x.
Proof.
  intros N x (Htri & Hhom).
  assert (E : vadd x (vscale (-1) x) = vscale 0 x)
    by (apply functional_extensionality; intros r; unfold vadd, vscale; ring).
  pose proof (Htri x (vscale (-1) x)) as H. rewrite E, !Hhom, Rabs_R0 in H.
  assert (Hm1 : Rabs (-1) = 1) by (rewrite Rabs_left; lra). rewrite Hm1 in H. lra.
Qed.

(** The first half: N(o) >= (1 - a_0) delta - a_0 N(u_0). *)
Lemma convex_hull_output : forall N n a u delta, is_norm N -> (forall k, (k <= n)%nat -> 0 <= a k) ->
  sum (S n) a = 1 -> 0 < delta ->
  (forall b : nat -> R, (forall k, (k < n)%nat -> 0 <= b k) -> sum n b = 1 ->
     delta <= N (combine n b (fun k => u (S k)))) ->
  (1 - a 0%nat) * delta - a 0%nat * N (u 0%nat) <= N (combine (S n) a u).
Proof.
  intros N n a u delta Hn Ha Hs Hd Hhull.
  pose proof (norm_nonneg N (u 0%nat) Hn) as Hu0. pose proof (norm_nonneg N (combine (S n) a u) Hn) as Ho.
  assert (Ha0 : 0 <= a 0%nat) by (apply Ha; lia).
  rewrite sum_first in Hs.
  assert (Hrest : 0 <= sum n (fun k => a (S k))) by (apply sum_nonneg; intros; apply Ha; lia).
  destruct (Req_dec (a 0%nat) 1) as [H1 | H1].
  - rewrite H1. nra.
  - set (s := 1 - a 0%nat). assert (Hs0 : 0 < s) by (unfold s; lra).
    set (b := fun k => a (S k) / s).
    assert (Hb : sum n b = 1).
    { unfold b, Rdiv. rewrite (sum_ext n _ (fun k => / s * a (S k))) by (intros; ring).
      rewrite sum_scale. replace (sum n (fun k => a (S k))) with s by (unfold s; lra). field. lra. }
    pose proof (Hhull b ltac:(intros k Hk; unfold b, Rdiv; apply Rmult_le_pos; [apply Ha; lia | left; apply Rinv_0_lt_compat; lra]) Hb) as Hp.
    set (p := combine n b (fun k => u (S k))) in *.
    assert (E : vscale s p = vadd (combine (S n) a u) (vscale (- a 0%nat) (u 0%nat))).
    { apply functional_extensionality. intros r. unfold vscale, vadd, p, combine, b.
      rewrite sum_first, <- sum_scale. rewrite (sum_ext n _ (fun k => a (S k) * u (S k) r))
        by (intros; field; lra). ring. }
    destruct Hn as (Htri & Hhom).
    pose proof (Htri (combine (S n) a u) (vscale (- a 0%nat) (u 0%nat))) as T.
    rewrite <- E, !Hhom, Rabs_Ropp, !Rabs_pos_eq in T by lra.
    assert (s * delta <= s * N p) by (apply Rmult_le_compat_l; lra).
    fold s. lra.
Qed.

Theorem sink_bound_convex_hull : SinkBoundConvexHull.
Proof.
  intros N n a u delta Hn Ha Hs Hd Hhull.
  pose proof (convex_hull_output N n a u delta Hn Ha Hs Hd Hhull) as H. split; [exact H|].
  pose proof (norm_nonneg N (u 0%nat) Hn) as Hu0.
  apply div_le_of_mul; [lra|]. nra.
Qed.
