(** T1 step 6 (proofs/flag_sum_lower_bound.py): along w = e_1 + e_{d-1} the target at every trigger
    is w . y_j = 1/j + (j-1)/j = 1, so A w_b + (j-1) B w_t + C w_r = Z_j (1 + omega_j) with
    |omega_j| <= 2 eta. Hence, for eta <= 1/120,
      w_t = 1 + omega_3 + rho (omega_3 - omega_2) >= m_t(eta),
      w_r = 1 + (A/C)(1 - w_b) + [Z_2 (2 omega_2 - omega_3) - B omega_3] / C >= m_r(eta). *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.TokenConsistency
  Sinks.BosQuery Sinks.RatioBound.
Open Scope R_scope.

Definition m_t (eta : R) : R := 1 - 2 * eta - 4 * eta * (2 + 48 * eta) / (1 - 48 * eta).
Definition m_r (eta : R) : R := 1 - 6 * eta - 8 * eta * (1 + 48 * eta) / (1 - 96 * eta).

(** m_r <= m_t on [0, 1/120]: the trigger's bound also bounds every content token. *)
Lemma m_r_le_m_t : forall eta, 0 <= eta <= 1 / 120 -> m_r eta <= m_t eta.
Proof.
  intros eta He. unfold m_r, m_t.
  assert (0 <= eta * (8 + 192 * eta) / (1 - 48 * eta)) by (apply Rmult_le_pos; [nra | left; apply Rinv_0_lt_compat; lra]).
  assert (eta * (8 + 192 * eta) / (1 - 48 * eta) <= eta * (8 + 384 * eta) / (1 - 96 * eta)).
  { unfold Rdiv. rewrite !Rmult_assoc. apply Rmult_le_compat_l; [lra|].
    apply Rmult_le_reg_r with ((1 - 48 * eta) * (1 - 96 * eta)); [nra|].
    field_simplify; [nra | lra | lra]. }
  replace (4 * eta * (2 + 48 * eta) / (1 - 48 * eta)) with (eta * (8 + 192 * eta) / (1 - 48 * eta)) by (field; lra).
  replace (8 * eta * (1 + 48 * eta) / (1 - 96 * eta)) with (eta * (8 + 384 * eta) / (1 - 96 * eta)) by (field; lra).
  lra.
Qed.

(** The algebra of step 6 (the certificates of proofs/flag_sum_lower_bound.py). *)
Lemma flag_sum_algebra : forall A B C wb wt wr eta o2 o3,
  0 < A -> 0 < B -> 0 < C -> 0 <= eta <= 1 / 120 ->
  Rabs o2 <= 2 * eta -> Rabs o3 <= 2 * eta -> wb <= 2 * eta ->
  (2 - 48 * eta) * B <= (A + B + C) * (1 + 48 * eta) -> (A + B + C) * (1 - 48 * eta) <= (2 + 48 * eta) * B ->
  A * wb + 1 * B * wt + C * wr = (A + 1 * B + C) * (1 + o2) ->
  A * wb + 2 * B * wt + C * wr = (A + 2 * B + C) * (1 + o3) ->
  (wt = 1 + o3 + (A + B + C) / B * (o3 - o2) /\
   wr = 1 + A / C * (1 - wb) + ((A + B + C) * (2 * o2 - o3) - B * o3) / C) /\
  m_t eta <= wt /\ m_r eta <= wr.
Proof.
  intros A B C wb wt wr eta o2 o3 HA HB HC He Ho2 Ho3 Hwb Hlo Hhi E2 E3.
  apply abs_le_bounds in Ho2. apply abs_le_bounds in Ho3.
  assert (Ewt : B * wt = B * (1 + o3) + (A + B + C) * (o3 - o2)) by lra.
  assert (Ewr : C * wr = C + A * (1 - wb) + (A + B + C) * (2 * o2 - o3) - B * o3) by lra.
  split; [split|split].
  - field_simplify_eq; [lra | lra].
  - field_simplify_eq; [lra | lra].
  - (* w_t - m_t = (o3 + 2 eta) + rho (o3 - o2 + 4 eta) + 4 eta [(2 + 48 eta) - rho (1 - 48 eta)]/(1 - 48 eta) *)
    set (q := (2 + 48 * eta) / (1 - 48 * eta)).
    assert (Hq : m_t eta = 1 - 2 * eta - 4 * eta * q) by (unfold m_t, q; field; lra).
    assert (Hbq : A + B + C <= q * B).
    { unfold q. unfold Rdiv. rewrite Rmult_assoc, (Rmult_comm (/ _)), <- Rmult_assoc.
      apply le_div_of_mul; [lra|]. lra. }
    assert (0 <= (A + B + C) * (o3 - o2 + 4 * eta)) by (apply Rmult_le_pos; lra).
    assert (0 <= eta * (q * B - (A + B + C))) by (apply Rmult_le_pos; lra).
    rewrite Hq. apply Rmult_le_reg_l with B; [assumption|]. nra.
  - (* C (w_r - m_r) >= A kappa with kappa = 1 - 8 eta - 8 eta k >= 0, k = (1 + 48 eta)/(1 - 96 eta) *)
    set (k := (1 + 48 * eta) / (1 - 96 * eta)).
    assert (Hk : m_r eta = 1 - 6 * eta - 8 * eta * k) by (unfold m_r, k; field; lra).
    assert (Hk1 : k * (1 - 96 * eta) = 1 + 48 * eta) by (unfold k; field; lra).
    assert (Hk7 : k <= 7).
    { unfold k. apply div_le_of_mul; lra. }
    assert (HBk : B <= k * (A + C)).
    { apply Rmult_le_reg_r with (1 - 96 * eta); [lra|].
      replace (k * (A + C) * (1 - 96 * eta)) with ((k * (1 - 96 * eta)) * (A + C)) by ring.
      rewrite Hk1. lra. }
    assert (0 <= A * (2 * eta - wb)) by (apply Rmult_le_pos; lra).
    assert (0 <= (A + B + C) * (2 * o2 - o3 + 6 * eta)) by (apply Rmult_le_pos; lra).
    assert (0 <= B * (2 * eta - o3)) by (apply Rmult_le_pos; lra).
    assert (0 <= eta * (k * (A + C) - B)) by (apply Rmult_le_pos; lra).
    assert (0 <= A * (1 - 8 * eta - 8 * eta * k)).
    { apply Rmult_le_pos; [lra|]. assert (eta * k <= eta * 7) by (apply Rmult_le_compat_l; lra). lra. }
    rewrite Hk. apply Rmult_le_reg_l with C; [assumption|]. nra.
Qed.

Section FlagSum.
Variables (d L : nat) (h : head) (eta : R).
Hypothesis Hd : (4 <= d)%nat.
Hypothesis HL : (5 <= L)%nat.

Definition w_b : R := g_b d h + h_b d h.
Definition w_t (c : content) : R := g_t d h c + h_t d h c.
Definition w_r (c : content) : R := g_r d h c + h_r d h c.

(** The rows along w at j = 2 and 3: A w_b + (j-1) B w_t + C w_r = Z_j (1 + omega_j). *)
Lemma flag_sum_rows_2_3 : forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> exists o2 o3, Rabs o2 <= 2 * eta /\ Rabs o3 <= 2 * eta /\
  trigger_A d h c * w_b + 1 * trigger_B d h c * w_t c + trigger_C d h c * w_r c
    = (trigger_A d h c + 1 * trigger_B d h c + trigger_C d h c) * (1 + o2) /\
  trigger_A d h c * w_b + 2 * trigger_B d h c * w_t c + trigger_C d h c * w_r c
    = (trigger_A d h c + 2 * trigger_B d h c + trigger_C d h c) * (1 + o3).
Proof.
  intros c Herr2 Herr3.
  destruct (content_flag_row d L h eta c Hd 2%nat ltac:(unfold valid_trigger; lia) Herr2) as (d2 & H2 & E2).
  destruct (content_flag_row d L h eta c Hd 3%nat ltac:(unfold valid_trigger; lia) Herr3) as (d3 & H3 & E3).
  destruct (trigger_flag_row d L h eta c Hd 2%nat ltac:(unfold valid_trigger; lia) Herr2) as (g2 & G2 & F2).
  destruct (trigger_flag_row d L h eta c Hd 3%nat ltac:(unfold valid_trigger; lia) Herr3) as (g3 & G3 & F3).
  simpl INR in E2, E3, F2, F3.
  exists (g2 + d2), (g3 + d3).
  apply abs_le_bounds in H2. apply abs_le_bounds in H3. apply abs_le_bounds in G2. apply abs_le_bounds in G3.
  unfold w_b, w_t, w_r.
  repeat split; try (apply Rabs_le; lra); lra.
Qed.

Lemma flag_sum_bound : eta <= 1 / 120 -> forall c, equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta ->
  m_t eta <= w_t c /\ m_r eta <= w_r c /\ m_r eta <= w_t c.
Proof.
  intros He c Herr2 Herr3 Herr4.
  assert (Hb : forall r, (r < d)%nat -> Rabs (value d h (bos d) r) <= eta)
    by (intros r Hr; exact (equal_content_bos_value d L h eta c 2 r ltac:(lia) ltac:(lia) Hr Herr2)).
  assert (He0 : 0 <= eta) by (apply abs_le_nonneg with (x := value d h (bos d) 0%nat); apply Hb; lia).
  destruct (flag_sum_rows_2_3 c Herr2 Herr3) as (o2 & o3 & Ho2 & Ho3 & E2 & E3).
  destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
  destruct (trigger_row_ratio_bound d L h eta c Hd HL Herr2 Herr3 Herr4) as (_ & Hlo & Hhi).
  unfold rho in Hlo, Hhi.
  assert (Hwb : w_b <= 2 * eta).
  { pose proof (abs_le_bounds _ _ (Hb trigger_flag ltac:(unfold trigger_flag; lia))).
    pose proof (abs_le_bounds _ _ (Hb (content_flag d) ltac:(unfold content_flag; lia))).
    unfold w_b, g_b, h_b. lra. }
  set (A := trigger_A d h c) in *. set (B := trigger_B d h c) in *. set (C := trigger_C d h c) in *.
  assert (Hlo' : (2 - 48 * eta) * B <= (A + B + C) * (1 + 48 * eta)).
  { apply Rmult_le_reg_r with (/ B); [apply Rinv_0_lt_compat; lra|].
    replace ((A + B + C) * (1 + 48 * eta) * / B) with ((A + B + C) / B * (1 + 48 * eta)) by (field; lra).
    replace ((2 - 48 * eta) * B * / B) with (2 - 48 * eta) by (field; lra). assumption. }
  assert (Hhi' : (A + B + C) * (1 - 48 * eta) <= (2 + 48 * eta) * B).
  { apply Rmult_le_reg_r with (/ B); [apply Rinv_0_lt_compat; lra|].
    replace ((A + B + C) * (1 - 48 * eta) * / B) with ((A + B + C) / B * (1 - 48 * eta)) by (field; lra).
    replace ((2 + 48 * eta) * B * / B) with (2 + 48 * eta) by (field; lra). assumption. }
  destruct (flag_sum_algebra A B C w_b (w_t c) (w_r c) eta o2 o3 HA HB HC (conj He0 He) Ho2 Ho3 Hwb Hlo' Hhi' E2 E3)
    as (_ & Ht & Hr).
  pose proof (m_r_le_m_t eta (conj He0 He)). repeat split; lra.
Qed.
End FlagSum.

(** The lemma: w_t(c) >= m_t(eta) >= m_r(eta) and w_r(c) >= m_r(eta) for a content c, from the
    error on S_2(c), S_3(c) and S_4(c) only (their BOS query rows included). *)
Definition FlagSumLowerBound : Prop :=
  forall d L (h : head) eta c, (4 <= d)%nat -> (5 <= L)%nat -> eta <= 1 / 120 ->
  equal_content_error_le d L (head_output Softmax d h) c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta ->
  m_t eta <= w_t d h c /\ m_r eta <= w_r d h c /\ m_r eta <= w_t d h c.

Theorem flag_sum_lower_bound : FlagSumLowerBound.
Proof. intros d L h eta c Hd HL He. exact (flag_sum_bound d L h eta Hd HL He c). Qed.

(** As T1 uses it: from the worst-case error, for every content in the box. *)
Lemma flag_sum_worst : forall d L (h : head) eta, (4 <= d)%nat -> (5 <= L)%nat -> eta <= 1 / 120 ->
  worst_error_le d L (head_output Softmax d h) eta ->
  forall c, content_in_box d c -> m_t eta <= w_t d h c /\ m_r eta <= w_r d h c /\ m_r eta <= w_t d h c.
Proof.
  intros d L h eta Hd HL He Herr c Hc. apply (flag_sum_bound d L h eta Hd HL He c);
    apply worst_error_on_equal_content; try assumption; unfold valid_trigger; lia.
Qed.

(** m_r > 0 on [0, 1/120] (so the direction bound of T1 (b) has a positive denominator). *)
Lemma m_r_pos : forall eta, 0 <= eta <= 1 / 120 -> 0 < m_r eta.
Proof.
  intros eta He.
  assert (Hk : (1 + 48 * eta) / (1 - 96 * eta) <= 7) by (apply div_le_of_mul; lra).
  assert (eta * ((1 + 48 * eta) / (1 - 96 * eta)) <= eta * 7) by (apply Rmult_le_compat_l; lra).
  replace (m_r eta) with (1 - 6 * eta - 8 * (eta * ((1 + 48 * eta) / (1 - 96 * eta))))
    by (unfold m_r; field; lra).
  lra.
Qed.
