(** T1 step 4 (proofs/sink_bound_direction.py): the sink bound along a direction.

    Weights a_0 .. a_n on the simplex, p_k = u . v_k the value images read along a direction u,
    p_k >= m for every k >= 1, p_0 >= -beta and u . o = sum_k a_k p_k <= eps: then
    a_0 >= (m - eps) / (m + beta). The proofs of T1 read u . o off two output coordinates
    (u = e_{d-1}, or u = e_1 + e_{d-1} with eps = 2 eta), where |o_r| <= eta gives u . o <= eps
    coordinate by coordinate; that is the README's Hoelder step for these two directions. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Facts.
Open Scope R_scope.

Definition SinkBoundDirection : Prop :=
  forall (n : nat) (a p : nat -> R) (m beta eps : R),
  (forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 ->
  - beta <= p 0%nat -> (forall k, (1 <= k <= n)%nat -> m <= p k) ->
  sum (S n) (fun k => a k * p k) <= eps -> 0 < m + beta ->
  (m - eps) / (m + beta) <= a 0%nat.

Theorem sink_bound_direction_core : SinkBoundDirection.
Proof.
  intros n a p m beta eps Ha Hsum Hp0 Hpk Ho Hmb.
  rewrite sum_first in Hsum, Ho.
  assert (Hrest : m * sum n (fun k => a (S k)) <= sum n (fun k => a (S k) * p (S k))).
  { rewrite <- sum_scale. apply sum_le. intros k Hk.
    rewrite Rmult_comm. apply Rmult_le_compat_l; [apply Ha; lia | apply Hpk; lia]. }
  assert (H0 : - beta * a 0%nat <= a 0%nat * p 0%nat).
  { rewrite Rmult_comm. apply Rmult_le_compat_l; [apply Ha; lia | assumption]. }
  apply div_le_of_mul; [assumption|].
  replace (sum n (fun k => a (S k))) with (1 - a 0%nat) in Hrest by lra. nra.
Qed.

(** The bound is attained: v_0 = -beta u, v_1 = m u, a_0 = (m - eps)/(m + beta) give u . o = eps. *)
Definition SinkBoundDirectionTight : Prop :=
  forall m beta eps, 0 < m + beta ->
  (m - eps) / (m + beta) * (- beta) + (1 - (m - eps) / (m + beta)) * m = eps.

Theorem sink_bound_direction_tight : SinkBoundDirectionTight.
Proof. intros m beta eps Hmb. field. lra. Qed.

(** The lemma: the bound, and that it is attained. *)
Theorem sink_bound_direction : SinkBoundDirection /\ SinkBoundDirectionTight.
Proof. exact (conj sink_bound_direction_core sink_bound_direction_tight). Qed.
