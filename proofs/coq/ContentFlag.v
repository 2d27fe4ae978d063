(** T1 step 3 (proofs/content_flag_lower_bound.py): every content token's image has content flag
    h_t >= 5/6 - 3 eta. Subtracting the trigger row at j = 2 from the one at j = 3 gives
    B h_t = B (2/3 + delta_3) + Z_2 (1/6 + delta_3 - delta_2), i.e.
    h_t = 2/3 + delta_3 + rho (1/6 + delta_3 - delta_2) with rho = Z_2 / B > 1. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.TokenConsistency.
Open Scope R_scope.

(** The identity of step 3, in the form without division. *)
Lemma content_flag_identity : forall A B C hb ht hr d2 d3,
  A * hb + 1 * B * ht + C * hr = (A + 1 * B + C) * (1 / 2 + d2) ->
  A * hb + 2 * B * ht + C * hr = (A + 2 * B + C) * (2 / 3 + d3) ->
  B * ht = B * (2 / 3 + d3) + (A + B + C) * (1 / 6 + d3 - d2).
Proof. intros. lra. Qed.

(** The algebra of step 3: h_t - (5/6 - 3 eta) = (rho - 1)[2(1/12 - eta) + (delta_3 + eta) +
    (eta - delta_2)] + 2 (delta_3 + eta) + (eta - delta_2), each term >= 0. *)
Lemma content_flag_algebra : forall A B C hb ht hr eta d2 d3,
  0 < A -> 0 < B -> 0 < C -> eta <= 1 / 12 -> Rabs d2 <= eta -> Rabs d3 <= eta ->
  A * hb + 1 * B * ht + C * hr = (A + 1 * B + C) * (1 / 2 + d2) ->
  A * hb + 2 * B * ht + C * hr = (A + 2 * B + C) * (2 / 3 + d3) ->
  5 / 6 - 3 * eta <= ht.
Proof.
  intros A B C hb ht hr eta d2 d3 HA HB HC He H2 H3 E2 E3.
  apply abs_le_bounds in H2. apply abs_le_bounds in H3.
  pose proof (content_flag_identity A B C hb ht hr d2 d3 E2 E3) as E.
  assert (0 <= (A + C) * (1 / 6 + d3 - d2)) by (apply Rmult_le_pos; lra).
  assert (0 <= B * (d3 + eta)) by (apply Rmult_le_pos; lra).
  assert (0 <= B * (eta - d2)) by (apply Rmult_le_pos; lra).
  apply Rmult_le_reg_l with B; [assumption|]. lra.
Qed.

Section ContentFlag.
Variables (d L : nat) (h : head) (eta : R).
Hypothesis Hd : (4 <= d)%nat.
Hypothesis HL : (4 <= L)%nat.

(** The trigger rows at j = 2 and j = 3 along the content flag, with numerals. *)
Lemma content_flag_rows_2_3 : forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta ->
  exists d2 d3, Rabs d2 <= eta /\ Rabs d3 <= eta /\
  trigger_A d h c * h_b d h + 1 * trigger_B d h c * h_t d h c + trigger_C d h c * h_r d h c
    = (trigger_A d h c + 1 * trigger_B d h c + trigger_C d h c) * (1 / 2 + d2) /\
  trigger_A d h c * h_b d h + 2 * trigger_B d h c * h_t d h c + trigger_C d h c * h_r d h c
    = (trigger_A d h c + 2 * trigger_B d h c + trigger_C d h c) * (2 / 3 + d3).
Proof.
  intros c Herr2 Herr3.
  destruct (content_flag_row d L h eta c Hd 2%nat ltac:(unfold valid_trigger; lia) Herr2) as (d2 & H2 & E2).
  destruct (content_flag_row d L h eta c Hd 3%nat ltac:(unfold valid_trigger; lia) Herr3) as (d3 & H3 & E3).
  simpl INR in E2, E3.
  exists d2, d3. repeat split; try assumption; lra.
Qed.

Lemma content_flag_bound : eta <= 1 / 12 ->
  forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> 5 / 6 - 3 * eta <= h_t d h c.
Proof.
  intros He c Herr2 Herr3. destruct (content_flag_rows_2_3 c Herr2 Herr3) as (d2 & d3 & H2 & H3 & E2 & E3).
  destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
  exact (content_flag_algebra _ _ _ _ _ _ eta d2 d3 HA HB HC He H2 H3 E2 E3).
Qed.
End ContentFlag.

(** The lemma: h_t(c) >= 5/6 - 3 eta for a content c, from the error on S_2(c) and S_3(c) only. *)
Definition ContentFlagLowerBound : Prop :=
  forall d L (h : head) eta c, (4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->
  equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> 5 / 6 - 3 * eta <= h_t d h c.

Theorem content_flag_lower_bound : ContentFlagLowerBound.
Proof. intros d L h eta c Hd HL He. exact (content_flag_bound d L h eta Hd HL He c). Qed.

(** As T1 uses it: from the worst-case error, for every content in the box. *)
Lemma content_flag_worst : forall d L (h : head) eta, (4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->
  worst_error_le d L (head_output Softmax d h) eta ->
  forall c, content_in_box d c -> 5 / 6 - 3 * eta <= h_t d h c.
Proof.
  intros d L h eta Hd HL He Herr c Hc. apply (content_flag_bound d L h eta Hd HL He c);
    apply worst_error_on_equal_content; try assumption; unfold valid_trigger; lia.
Qed.
