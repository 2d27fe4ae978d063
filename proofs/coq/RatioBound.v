(** T1 step 5 (proofs/trigger_row_ratio_bound.py): for L >= 5 the trigger row's ratio
    rho = Z_2 / B = (A + B + C) / B is pinned near 2. The second difference of the trigger rows
    at j = 2, 3, 4 along the content flag gives
    rho - 2 = 12 [(rho + 2) delta_4 - 2 (rho + 1) delta_3 + rho delta_2]. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.TokenConsistency.
Open Scope R_scope.

Definition rho (d : nat) (h : head) (c : content) : R :=
  (trigger_A d h c + trigger_B d h c + trigger_C d h c) / trigger_B d h c.

Lemma ratio_identity_mul : forall A B C hb ht hr d2 d3 d4,
  A * hb + 1 * B * ht + C * hr = (A + 1 * B + C) * (1 / 2 + d2) ->
  A * hb + 2 * B * ht + C * hr = (A + 2 * B + C) * (2 / 3 + d3) ->
  A * hb + 3 * B * ht + C * hr = (A + 3 * B + C) * (3 / 4 + d4) ->
  (A + B + C) - 2 * B = 12 * ((A + 3 * B + C) * d4 - 2 * (A + 2 * B + C) * d3 + (A + B + C) * d2).
Proof. intros. lra. Qed.

Lemma ratio_algebra : forall A B C hb ht hr eta d2 d3 d4,
  0 < A -> 0 < B -> 0 < C -> Rabs d2 <= eta -> Rabs d3 <= eta -> Rabs d4 <= eta ->
  A * hb + 1 * B * ht + C * hr = (A + 1 * B + C) * (1 / 2 + d2) ->
  A * hb + 2 * B * ht + C * hr = (A + 2 * B + C) * (2 / 3 + d3) ->
  A * hb + 3 * B * ht + C * hr = (A + 3 * B + C) * (3 / 4 + d4) ->
  let r := (A + B + C) / B in
  r - 2 = 12 * ((r + 2) * d4 - 2 * (r + 1) * d3 + r * d2) /\
  2 - 48 * eta <= r * (1 + 48 * eta) /\ r * (1 - 48 * eta) <= 2 + 48 * eta.
Proof.
  intros A B C hb ht hr eta d2 d3 d4 HA HB HC H2 H3 H4 E2 E3 E4 r.
  pose proof (ratio_identity_mul A B C hb ht hr d2 d3 d4 E2 E3 E4) as E.
  apply abs_le_bounds in H2. apply abs_le_bounds in H3. apply abs_le_bounds in H4.
  assert (Hr : r * B = A + B + C) by (unfold r; field; lra).
  assert (0 <= (A + 3 * B + C) * (eta + d4)) by (apply Rmult_le_pos; lra).
  assert (0 <= (A + 3 * B + C) * (eta - d4)) by (apply Rmult_le_pos; lra).
  assert (0 <= (A + 2 * B + C) * (eta + d3)) by (apply Rmult_le_pos; lra).
  assert (0 <= (A + 2 * B + C) * (eta - d3)) by (apply Rmult_le_pos; lra).
  assert (0 <= (A + B + C) * (eta + d2)) by (apply Rmult_le_pos; lra).
  assert (0 <= (A + B + C) * (eta - d2)) by (apply Rmult_le_pos; lra).
  assert (Hlo : (2 - 48 * eta) * B <= (A + B + C) * (1 + 48 * eta)) by lra.
  assert (Hhi : (A + B + C) * (1 - 48 * eta) <= (2 + 48 * eta) * B) by lra.
  split; [|split].
  - unfold r. field_simplify_eq; [|lra]. lra.
  - apply Rmult_le_reg_r with B; [assumption|].
    replace (r * (1 + 48 * eta) * B) with (r * B * (1 + 48 * eta)) by ring. rewrite Hr. lra.
  - apply Rmult_le_reg_r with B; [assumption|].
    replace (r * (1 - 48 * eta) * B) with (r * B * (1 - 48 * eta)) by ring. rewrite Hr. lra.
Qed.

Section RatioBound.
Variables (d L : nat) (h : head) (eta : R).
Hypothesis Hd : (4 <= d)%nat.

(** The trigger rows at j = 2, 3, 4 along the content flag, with numerals. *)
Lemma content_flag_rows_2_3_4 : (5 <= L)%nat -> forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta ->
  exists d2 d3 d4, Rabs d2 <= eta /\ Rabs d3 <= eta /\ Rabs d4 <= eta /\
  trigger_A d h c * h_b d h + 1 * trigger_B d h c * h_t d h c + trigger_C d h c * h_r d h c
    = (trigger_A d h c + 1 * trigger_B d h c + trigger_C d h c) * (1 / 2 + d2) /\
  trigger_A d h c * h_b d h + 2 * trigger_B d h c * h_t d h c + trigger_C d h c * h_r d h c
    = (trigger_A d h c + 2 * trigger_B d h c + trigger_C d h c) * (2 / 3 + d3) /\
  trigger_A d h c * h_b d h + 3 * trigger_B d h c * h_t d h c + trigger_C d h c * h_r d h c
    = (trigger_A d h c + 3 * trigger_B d h c + trigger_C d h c) * (3 / 4 + d4).
Proof.
  intros HL c Herr2 Herr3 Herr4.
  destruct (content_flag_row d L h eta c Hd 2%nat ltac:(unfold valid_trigger; lia) Herr2) as (d2 & H2 & E2).
  destruct (content_flag_row d L h eta c Hd 3%nat ltac:(unfold valid_trigger; lia) Herr3) as (d3 & H3 & E3).
  destruct (content_flag_row d L h eta c Hd 4%nat ltac:(unfold valid_trigger; lia) Herr4) as (d4 & H4 & E4).
  simpl INR in E2, E3, E4.
  exists d2, d3, d4. repeat split; try assumption; lra.
Qed.

(** The lemma: rho - 2 = 12 [(rho + 2) delta_4 - 2 (rho + 1) delta_3 + rho delta_2] with
    |delta_j| <= eta, hence rho (1 + 48 eta) >= 2 - 48 eta and rho (1 - 48 eta) <= 2 + 48 eta. *)
Lemma trigger_row_ratio : (5 <= L)%nat -> forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta ->
  (exists d2 d3 d4, Rabs d2 <= eta /\ Rabs d3 <= eta /\ Rabs d4 <= eta /\
     rho d h c - 2 = 12 * ((rho d h c + 2) * d4 - 2 * (rho d h c + 1) * d3 + rho d h c * d2)) /\
  2 - 48 * eta <= rho d h c * (1 + 48 * eta) /\ rho d h c * (1 - 48 * eta) <= 2 + 48 * eta.
Proof.
  intros HL c Herr2 Herr3 Herr4.
  destruct (content_flag_rows_2_3_4 HL c Herr2 Herr3 Herr4) as (d2 & d3 & d4 & H2 & H3 & H4 & E2 & E3 & E4).
  destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
  destruct (ratio_algebra _ _ _ _ _ _ eta d2 d3 d4 HA HB HC H2 H3 H4 E2 E3 E4) as (Hid & Hlo & Hhi).
  split; [exists d2, d3, d4; repeat split; assumption | split; assumption].
Qed.
End RatioBound.

Definition TriggerRowRatioBound : Prop :=
  forall d L (h : head) eta c, (4 <= d)%nat -> (5 <= L)%nat ->
  equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta ->
  (exists d2 d3 d4, Rabs d2 <= eta /\ Rabs d3 <= eta /\ Rabs d4 <= eta /\
     rho d h c - 2 = 12 * ((rho d h c + 2) * d4 - 2 * (rho d h c + 1) * d3 + rho d h c * d2)) /\
  2 - 48 * eta <= rho d h c * (1 + 48 * eta) /\ rho d h c * (1 - 48 * eta) <= 2 + 48 * eta.

Theorem trigger_row_ratio_bound : TriggerRowRatioBound.
Proof. intros d L h eta c Hd HL. exact (trigger_row_ratio d L h eta Hd HL c). Qed.
