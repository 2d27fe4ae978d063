(** A trigger that barely attends to itself has a large trigger-flag image
    (proofs/trigger_flag_lower_bound.py). Subtracting the trigger row at j = 3 from twice the one
    at j = 2, along the trigger flag: C g_r = (2A + B + 2C)/3 + Z_2 (2 gamma_2 - gamma_3)
    - B gamma_3 - A g_b, so g_r >= 2/3 - 3 eta + (B/C)(1/3 - 4 eta) + (A/C)(2/3 - 4 eta). *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.TokenConsistency.
Open Scope R_scope.

(** The identity, in the form without division. *)
Lemma trigger_flag_identity : forall A B C gb gt gr g2 g3,
  A * gb + 1 * B * gt + C * gr = (A + 1 * B + C) * (1 / 2 + g2) ->
  A * gb + 2 * B * gt + C * gr = (A + 2 * B + C) * (1 / 3 + g3) ->
  C * gr = (2 * A + B + 2 * C) / 3 + (A + B + C) * (2 * g2 - g3) - B * g3 - A * gb.
Proof. intros. lra. Qed.

Definition TriggerFlagLowerBound : Prop :=
  forall d L (h : head) eta c, (4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->
  equal_content_error_le d L (head_output Softmax d h) c 2 eta ->
  equal_content_error_le d L (head_output Softmax d h) c 3 eta ->
  2 / 3 - 3 * eta + trigger_B d h c / trigger_C d h c * (1 / 3 - 4 * eta)
    + trigger_A d h c / trigger_C d h c * (2 / 3 - 4 * eta) <= g_r d h c.

Theorem trigger_flag_lower_bound : TriggerFlagLowerBound.
Proof.
  intros d L h eta c Hd HL He Herr2 Herr3.
  destruct (trigger_flag_row d L h eta c Hd 2%nat ltac:(unfold valid_trigger; lia) Herr2) as (g2 & G2 & F2).
  destruct (trigger_flag_row d L h eta c Hd 3%nat ltac:(unfold valid_trigger; lia) Herr3) as (g3 & G3 & F3).
  simpl INR in F2, F3.
  assert (Hgb : Rabs (g_b d h) <= eta)
    by exact (equal_content_bos_value d L h eta c 2 trigger_flag ltac:(lia) ltac:(lia) ltac:(unfold trigger_flag; lia) Herr2).
  destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
  set (A := trigger_A d h c) in *. set (B := trigger_B d h c) in *. set (C := trigger_C d h c) in *.
  replace (1 / INR 2) with (1 / 2) in F2 by (simpl; field).
  replace (1 / INR 3) with (1 / 3) in F3 by (simpl; field).
  pose proof (trigger_flag_identity A B C (g_b d h) (g_t d h c) (g_r d h c) g2 g3 ltac:(lra) ltac:(lra)) as E.
  apply abs_le_bounds in G2. apply abs_le_bounds in G3. apply abs_le_bounds in Hgb.
  assert (Hlow : A * (2 / 3 - 4 * eta) + B * (1 / 3 - 4 * eta) + C * (2 / 3 - 3 * eta) <= C * g_r d h c).
  { rewrite E.
    assert (0 <= (A + B + C) * (g2 + eta)) by (apply Rmult_le_pos; lra).
    assert (0 <= (A + B + C) * (eta - g3)) by (apply Rmult_le_pos; lra).
    assert (0 <= B * (eta - g3)) by (apply Rmult_le_pos; lra).
    assert (0 <= A * (eta - g_b d h)) by (apply Rmult_le_pos; lra).
    lra. }
  apply Rmult_le_reg_l with C; [assumption|].
  replace (C * (2 / 3 - 3 * eta + B / C * (1 / 3 - 4 * eta) + A / C * (2 / 3 - 4 * eta)))
    with (A * (2 / 3 - 4 * eta) + B * (1 / 3 - 4 * eta) + C * (2 / 3 - 3 * eta)) by (field; lra).
  exact Hlow.
Qed.
