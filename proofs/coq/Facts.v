(** Small facts about the reals used by several proofs. *)
Require Import Reals Lra.
Open Scope R_scope.

Lemma abs_le_bounds : forall x e, Rabs x <= e -> - e <= x <= e.
Proof.
  intros x e H. pose proof (Rle_abs x). pose proof (Rle_abs (- x)). rewrite Rabs_Ropp in *. lra.
Qed.

Lemma abs_le_nonneg : forall x e, Rabs x <= e -> 0 <= e.
Proof. intros x e H. pose proof (Rabs_pos x). lra. Qed.

(** x <= y / z from x z <= y, z > 0 (and the mirror image). *)
Lemma le_div_of_mul : forall x y z, 0 < z -> x * z <= y -> x <= y / z.
Proof.
  intros x y z Hz H. apply Rmult_le_reg_r with z; [assumption|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. assumption.
Qed.

Lemma div_le_of_mul : forall x y z, 0 < z -> x <= y * z -> x / z <= y.
Proof.
  intros x y z Hz H. apply Rmult_le_reg_r with z; [assumption|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. assumption.
Qed.

(** From a N / Z = t with Z <> 0 to N = Z t. *)
Lemma div_eq_mul : forall n z t, z <> 0 -> n / z = t -> n = z * t.
Proof. intros n z t Hz H. rewrite <- H. field. assumption. Qed.

(** 1 + x <= e^x for x >= 0, from the series of exp (the standard library's exp_ineq1_le goes
    through the mean value theorem and the axiom of excluded middle; this proof does not). *)
Lemma exp_ge_1_plus : forall x, 0 <= x -> 1 + x <= exp x.
Proof.
  intros x Hx. set (An := fun N : nat => / INR (fact N) * x ^ N).
  assert (Hcv : Un_cv (fun n => sum_f_R0 An n) (exp x)).
  { unfold exp, projT1. case (exist_exp x). intros l Hl. unfold exp_in, infinite_sum, Un_cv in *. exact Hl. }
  apply Rle_trans with (sum_f_R0 An 1).
  - unfold An. simpl. rewrite Rinv_1. lra.
  - apply sum_incr; [exact Hcv|]. intro n. unfold An.
    apply Rmult_le_pos; [left; apply Rinv_0_lt_compat, INR_fact_lt_0 | apply pow_le; exact Hx].
Qed.
