(** t1_pre_trigger_sharp (proofs/t1_tightness.py): for L >= 5 the pinned ratio sharpens T1 (a) to
    1 - a_i0 <= 2 eta / (m_5(eta) + eta) = 2 eta + O(eta^2) before the trigger. With
    rho >= (2 - 48 eta)/(1 + 48 eta) the identity of step 3 gives h_t >= m_5(eta). *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.BosQuery
  Sinks.TokenConsistency Sinks.DirectionBound Sinks.ContentFlag Sinks.RatioBound Sinks.T1.
Open Scope R_scope.

Definition m_5 (eta : R) : R := 2 / 3 - eta + (2 - 48 * eta) * (1 / 6 - 2 * eta) / (1 + 48 * eta).
Definition f_pre_sharp (eta : R) : R := 2 * eta / (m_5 eta + eta).

Definition T1_sharp : Prop :=
  forall d L (h : head) eta, (4 <= d)%nat -> (5 <= L)%nat -> eta <= 1 / 120 ->
  worst_error_le d L (head_output Softmax d h) eta ->
  forall j cs i, valid_trigger L j -> in_box d L cs -> (1 <= i < j)%nat ->
  1 - f_pre_sharp eta <= softmax_weight d h (sequence d j cs) i 0.

(** h_t - m_5 = (delta_3 + eta) + rho (delta_3 + eta) + rho (eta - delta_2)
                + (1/6 - 2 eta) [rho (1 + 48 eta) - (2 - 48 eta)] / (1 + 48 eta). *)
Lemma content_flag_sharp_algebra : forall A B C hb ht hr eta d2 d3,
  0 < A -> 0 < B -> 0 < C -> 0 <= eta <= 1 / 120 -> Rabs d2 <= eta -> Rabs d3 <= eta ->
  (2 - 48 * eta) * B <= (A + B + C) * (1 + 48 * eta) ->
  A * hb + 1 * B * ht + C * hr = (A + 1 * B + C) * (1 / 2 + d2) ->
  A * hb + 2 * B * ht + C * hr = (A + 2 * B + C) * (2 / 3 + d3) ->
  m_5 eta <= ht.
Proof.
  intros A B C hb ht hr eta d2 d3 HA HB HC He H2 H3 Hlo E2 E3.
  apply abs_le_bounds in H2. apply abs_le_bounds in H3.
  pose proof (content_flag_identity A B C hb ht hr d2 d3 E2 E3) as E.
  set (s := (1 / 6 - 2 * eta) / (1 + 48 * eta)).
  assert (Hs : s * (1 + 48 * eta) = 1 / 6 - 2 * eta) by (unfold s; field; lra).
  assert (Hs0 : 0 <= s) by (unfold s; apply Rmult_le_pos; [lra | left; apply Rinv_0_lt_compat; lra]).
  assert (Hm : m_5 eta = 2 / 3 - eta + (2 - 48 * eta) * s) by (unfold m_5, s; field; lra).
  assert (0 <= (A + B + C) * (d3 - d2 + 2 * eta)) by (apply Rmult_le_pos; lra).
  assert (0 <= B * (d3 + eta)) by (apply Rmult_le_pos; lra).
  assert (0 <= s * ((A + B + C) * (1 + 48 * eta) - (2 - 48 * eta) * B)) by (apply Rmult_le_pos; lra).
  assert (Hz : s * ((A + B + C) * (1 + 48 * eta)) = (A + B + C) * (1 / 6 - 2 * eta)).
  { rewrite <- Hs. ring. }
  rewrite Hm. apply Rmult_le_reg_l with B; [assumption|]. nra.
Qed.

Theorem t1_pre_trigger_sharp : T1_sharp.
Proof.
  intros d L h eta Hd HL He Herr j cs i Hj Hb Hi.
  assert (HL4 : (4 <= L)%nat) by lia.
  pose proof (error_nonneg d L h eta Hd HL4 Herr) as He0.
  unfold valid_trigger in Hj.
  assert (Hm5 : forall c, content_in_box d c -> m_5 eta <= h_t d h c).
  { intros c Hc.
    assert (Hon : forall j, (2 <= j <= 4)%nat -> equal_content_error_le d L (head_output Softmax d h) c j eta)
      by (intros j' Hj'; apply worst_error_on_equal_content; try assumption; unfold valid_trigger; lia).
    destruct (content_flag_rows_2_3_4 d L h eta Hd HL c (Hon 2%nat ltac:(lia)) (Hon 3%nat ltac:(lia)) (Hon 4%nat ltac:(lia)))
      as (d2 & d3 & d4 & H2 & H3 & _ & E2 & E3 & _).
    destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
    destruct (trigger_row_ratio_bound d L h eta c Hd HL (Hon 2%nat ltac:(lia)) (Hon 3%nat ltac:(lia)) (Hon 4%nat ltac:(lia)))
      as (_ & Hlo & _). unfold rho in Hlo.
    apply (content_flag_sharp_algebra _ _ _ (h_b d h) _ (h_r d h c) eta d2 d3 HA HB HC (conj He0 He) H2 H3);
      try assumption.
    apply Rmult_le_reg_r with (/ trigger_B d h c); [apply Rinv_0_lt_compat; lra|].
    replace ((2 - 48 * eta) * trigger_B d h c * / trigger_B d h c) with (2 - 48 * eta) by (field; lra).
    replace ((trigger_A d h c + trigger_B d h c + trigger_C d h c) * (1 + 48 * eta) * / trigger_B d h c)
      with ((trigger_A d h c + trigger_B d h c + trigger_C d h c) / trigger_B d h c * (1 + 48 * eta)) by (field; lra).
    assumption. }
  assert (Hpos : 2 / 3 - eta <= m_5 eta).
  { unfold m_5. assert (0 <= (2 - 48 * eta) * (1 / 6 - 2 * eta) / (1 + 48 * eta)).
    { apply Rmult_le_pos; [apply Rmult_le_pos; lra | left; apply Rinv_0_lt_compat; lra]. } lra. }
  assert (H := sink_at_query d h (sequence d j cs) i (fun k => value d h (sequence d j cs k) (content_flag d))
                 (m_5 eta) eta eta).
  replace ((m_5 eta - eta) / (m_5 eta + eta)) with (1 - f_pre_sharp eta) in H
    by (unfold f_pre_sharp; field; lra).
  apply H.
  - rewrite sequence_bos. apply (abs_le_bounds _ _ (proj2 (bos_query_sees_only_bos d L h eta Hd HL4 Herr)
      (content_flag d) ltac:(unfold content_flag; lia))).
  - intros k Hk. rewrite sequence_content by lia. apply Hm5. apply Hb. lia.
  - rewrite <- softmax_output_images.
    apply (output_off_trigger d L h eta Herr j cs i); unfold valid_trigger, content_flag; auto; lia.
  - lra.
Qed.
