(** Sufficiency (proofs/softmax_family_limits.py, constructions/softmax_head.py): the softmax head
    with BOS logit gap beta, W_Q = beta (E[0, BOS] + E[0, content flag] - E[0, trigger]),
    W_K = E[0, BOS], W_V = I - E[BOS, BOS], W_O = I. Its BOS mass is e^b/(e^b + i) at a
    non-trigger query i >= 1 and e^-b/(e^-b + j) at the trigger; its worst-case error is at most
    L e^-beta for every real beta. So T1's hypotheses hold for some head (non-vacuity): (a) with
    eta <= 1/12, (b) and the sharp bound with eta <= 1/120, and the residual form, for every
    d >= 4 and L >= 4 (a fortiori for the L >= 5 of (b)). *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.T1Residual Sinks.Cancelling.
Import ListNotations.
Open Scope R_scope.

Definition sufficiency_W_Q (d : nat) (beta : R) : mat := fun r c =>
  beta * unit_mat 0 bos_flag r c + beta * unit_mat 0 (content_flag d) r c - beta * unit_mat 0 trigger_flag r c.

(** The head of softmax_head.build(d, beta): the keys and values of the cancelling heads. *)
Definition sufficiency_head (d : nat) (beta : R) : head :=
  mk_head (sufficiency_W_Q d beta) cancel_W_K cancel_W_V id_mat.

Section Head.
Variables (d : nat) (beta : R).
Hypothesis Hd : (4 <= d)%nat.

Lemma sufficiency_score : forall x y,
  score d (sufficiency_head d beta) x y = beta * (x bos_flag + x (content_flag d) - x trigger_flag) * y bos_flag.
Proof.
  intros x y. unfold score, dot. simpl W_Q. simpl W_K.
  rewrite (sum_single d 0); [| lia |].
  - unfold sufficiency_W_Q, cancel_W_K, matvec.
    rewrite (sum_ext d _ (fun c => beta * (unit_mat 0 bos_flag 0%nat c * x c + unit_mat 0 (content_flag d) 0%nat c * x c
                                          + - (unit_mat 0 trigger_flag 0%nat c * x c)))) by (intros; ring).
    rewrite sum_scale, !sum_plus, sum_opp.
    fold (matvec d (unit_mat 0 bos_flag) x 0%nat) (matvec d (unit_mat 0 (content_flag d)) x 0%nat)
      (matvec d (unit_mat 0 trigger_flag) x 0%nat) (matvec d (unit_mat 0 bos_flag) y 0%nat).
    rewrite !matvec_unit by (unfold bos_flag, trigger_flag, content_flag; lia). simpl. ring.
  - intros k _ Hk. unfold cancel_W_K. rewrite matvec_unit by (unfold bos_flag; lia).
    destruct (Nat.eqb_spec k 0); [lia | ring].
Qed.

(** The query's factor: -1 at the trigger, +1 at every other position i >= 1. *)
Definition gap (j i : nat) : R := if Nat.eqb i j then - beta else beta.

Lemma sufficiency_query_factor : forall j cs i, (1 <= i)%nat ->
  beta * (sequence d j cs i bos_flag + sequence d j cs i (content_flag d) - sequence d j cs i trigger_flag) = gap j i.
Proof.
  intros j cs i Hi. rewrite sequence_bos_flag by assumption. unfold gap.
  destruct (Nat.eqb_spec i j) as [->|Hij].
  - rewrite sequence_trigger, trigger_content_flag, trigger_trigger_flag by assumption. ring.
  - rewrite sequence_content, content_content_flag, content_trigger_flag by assumption. ring.
Qed.

Lemma sufficiency_weight : forall j cs i k, (1 <= i)%nat ->
  softmax_weight d (sufficiency_head d beta) (sequence d j cs) i k
  = (if Nat.eqb k 0 then exp (gap j i) else 1) / (exp (gap j i) + INR i).
Proof.
  intros j cs i k Hi.
  assert (Hs : forall k', score d (sufficiency_head d beta) (sequence d j cs i) (sequence d j cs k')
                          = if Nat.eqb k' 0 then gap j i else 0).
  { intros k'. rewrite sufficiency_score, sufficiency_query_factor by assumption.
    destruct (Nat.eqb_spec k' 0) as [->|Hk'].
    - rewrite sequence_bos. unfold bos, bos_flag. simpl. ring.
    - rewrite sequence_bos_flag by (assumption || lia). ring. }
  unfold softmax_weight. rewrite Hs, sum_first, Hs. simpl Nat.eqb.
  rewrite (sum_const i 1) by (intros; rewrite Hs; simpl; apply exp_0). rewrite Rmult_1_r.
  destruct (Nat.eqb k 0); [reflexivity | rewrite exp_0; reflexivity].
Qed.

Lemma sufficiency_value : forall j cs k r, (r < d)%nat ->
  value d (sufficiency_head d beta) (sequence d j cs k) r = if Nat.eqb k 0 then 0 else sequence d j cs k r.
Proof.
  intros. unfold value, sufficiency_head. simpl W_O. simpl W_V.
  rewrite matvec_id by assumption. apply cancel_values_of_sequence; assumption.
Qed.

(** The output at a query i >= 1: the sum of the tokens 1 .. i over e^(+-b) + i. *)
Lemma sufficiency_output : forall j cs i r, (1 <= i)%nat -> (r < d)%nat ->
  head_output Softmax d (sufficiency_head d beta) (sequence d j cs) i r
  = / (exp (gap j i) + INR i) * sum i (fun k => sequence d j cs (S k) r).
Proof.
  intros j cs i r Hi Hr. rewrite softmax_output_images, sum_first, <- sum_scale.
  rewrite sufficiency_value by assumption. simpl Nat.eqb. rewrite Rmult_0_r, Rplus_0_l.
  apply sum_ext. intros k Hk. rewrite sufficiency_weight, sufficiency_value by (assumption || lia).
  simpl Nat.eqb. unfold Rdiv. ring.
Qed.

Lemma sufficiency_output_bos : forall j cs r, (r < d)%nat ->
  head_output Softmax d (sufficiency_head d beta) (sequence d j cs) 0%nat r = 0.
Proof.
  intros. rewrite softmax_output_images. simpl sum. rewrite sufficiency_value by assumption. simpl. ring.
Qed.
End Head.

(** |S / (E + J) - S / J| = |S| E / (J (E + J)) <= E <= L E for |S| <= J and J >= 2. *)
Lemma sufficiency_trigger_error : forall J Lr E S, 2 <= J -> 0 <= Lr - 1 -> 0 < E -> Rabs S <= J ->
  Rabs (/ (E + J) * S - / J * S) <= Lr * E.
Proof.
  intros J Lr E S HJ HL HE HS.
  set (g := E / (J * (E + J))).
  assert (Hg : 0 <= g) by (unfold g; left; apply Rdiv_lt_0_compat; nra).
  replace (/ (E + J) * S - / J * S) with (- (g * S)) by (unfold g; field; lra).
  rewrite Rabs_Ropp, Rabs_mult, (Rabs_pos_eq g Hg).
  apply Rle_trans with (g * J); [apply Rmult_le_compat_l; assumption|].
  replace (g * J) with (E / (E + J)) by (unfold g; field; lra).
  assert (E / (E + J) <= E) by (apply div_le_of_mul; [lra | nra]). nra.
Qed.

(** |S| / (F + i) <= i / F = i e^-b <= L e^-b for |S| <= i < L. *)
Lemma sufficiency_off_trigger_error : forall I Lr b S, 0 <= I -> I <= Lr -> Rabs S <= I ->
  Rabs (/ (exp b + I) * S) <= Lr * exp (- b).
Proof.
  intros I Lr b S HI HL HS. pose proof (exp_pos b) as HF.
  rewrite Rabs_mult, Rabs_pos_eq by (left; apply Rinv_0_lt_compat; lra).
  rewrite exp_Ropp. apply Rle_trans with (/ exp b * I).
  - apply Rle_trans with (/ (exp b + I) * I); [apply Rmult_le_compat_l; [left; apply Rinv_0_lt_compat; lra | lra]|].
    apply Rmult_le_compat_r; [lra|]. apply Rinv_le_contravar; lra.
  - rewrite Rmult_comm. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat | ]; lra.
Qed.

Lemma abs_token_sum : forall d L j cs i r, (4 <= d)%nat -> in_box d L cs -> (i < L)%nat ->
  Rabs (sum i (fun k => sequence d j cs (S k) r)) <= INR i.
Proof.
  intros d L j cs i r Hd Hb Hi.
  eapply Rle_trans; [apply sum_abs|]. rewrite <- (Rmult_1_r (INR i)), <- (sum_const i 1 (fun _ => 1)) by auto.
  apply sum_le. intros k Hk. apply (sequence_bounded d L); [assumption | assumption | lia].
Qed.

(** Worst-case error <= L e^-beta on every input, for every real beta. *)
Theorem sufficiency_head_error : forall d L beta, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_error_le d L (head_output Softmax d (sufficiency_head d beta)) (cancel_error_bound L beta).
Proof.
  intros d L beta Hd HL j cs i r Hj Hb Hi Hr. unfold cancel_error_bound. unfold valid_trigger in Hj.
  pose proof (exp_pos (- beta)) as HE. pose proof (pos_INR L) as HL0.
  destruct (Nat.eq_dec i 0) as [->|Hi0].
  - rewrite sufficiency_output_bos, target_off_trigger by (assumption || lia).
    rewrite Rminus_0_r, Rabs_R0. nra.
  - rewrite sufficiency_output by (assumption || lia). pose proof (abs_token_sum d L j cs i r Hd Hb Hi) as HS.
    unfold gap. destruct (Nat.eq_dec i j) as [->|Hij].
    + rewrite Nat.eqb_refl. unfold target. rewrite Nat.eqb_refl.
      apply sufficiency_trigger_error; try assumption.
      * replace 2 with (INR 2) by (simpl; ring). apply le_INR. lia.
      * assert (1 <= INR L) by (replace 1 with (INR 1) by reflexivity; apply le_INR; lia). lra.
    + replace (Nat.eqb i j) with false by (symmetry; apply Nat.eqb_neq; assumption).
      rewrite target_off_trigger, Rminus_0_r by assumption.
      apply sufficiency_off_trigger_error; [apply pos_INR | apply le_INR; lia | assumption].
Qed.

(** The BOS mass: e^b/(e^b + i) off the trigger, e^-b/(e^-b + j) at it; both within L e^-b of
    their limits 1 and 0. *)
Definition SufficiencyBosMass : Prop :=
  forall d L beta j cs, (4 <= d)%nat -> (4 <= L)%nat -> valid_trigger L j ->
  (forall i, (1 <= i < L)%nat -> i <> j ->
     softmax_weight d (sufficiency_head d beta) (sequence d j cs) i 0 = exp beta / (exp beta + INR i) /\
     1 - cancel_error_bound L beta <= softmax_weight d (sufficiency_head d beta) (sequence d j cs) i 0) /\
  softmax_weight d (sufficiency_head d beta) (sequence d j cs) j 0 = exp (- beta) / (exp (- beta) + INR j) /\
  softmax_weight d (sufficiency_head d beta) (sequence d j cs) j 0 <= cancel_error_bound L beta.

Theorem sufficiency_bos_mass : SufficiencyBosMass.
Proof.
  intros d L beta j cs Hd HL Hj. unfold valid_trigger in Hj. unfold cancel_error_bound.
  pose proof (exp_pos beta) as HF. pose proof (exp_pos (- beta)) as HE.
  assert (HEF : exp (- beta) * exp beta = 1) by (rewrite exp_Ropp; field; lra).
  split; [intros i Hi Hij | split].
  - rewrite sufficiency_weight by (assumption || lia). simpl Nat.eqb. unfold gap.
    replace (Nat.eqb i j) with false by (symmetry; apply Nat.eqb_neq; assumption). split; [reflexivity|].
    assert (HI : INR i <= INR L) by (apply le_INR; lia). pose proof (pos_INR i).
    replace (exp beta / (exp beta + INR i)) with (1 - INR i / (exp beta + INR i)) by (field; lra).
    assert (INR i / (exp beta + INR i) <= INR L * exp (- beta)); [|lra].
    apply div_le_of_mul; [lra|].
    replace (INR L * exp (- beta) * (exp beta + INR i)) with
      (INR L * (exp (- beta) * exp beta) + INR L * exp (- beta) * INR i) by ring.
    rewrite HEF. assert (0 <= INR L * exp (- beta) * INR i) by (apply Rmult_le_pos; [nra | lra]). lra.
  - rewrite sufficiency_weight by (assumption || lia). unfold gap. rewrite (Nat.eqb_refl j). reflexivity.
  - rewrite sufficiency_weight by (assumption || lia). unfold gap. rewrite (Nat.eqb_refl j). simpl Nat.eqb.
    assert (HJ : 2 <= INR j) by (replace 2 with (INR 2) by (simpl; ring); apply le_INR; lia).
    assert (HLj : INR j <= INR L) by (apply le_INR; lia).
    apply div_le_of_mul; [lra|].
    replace (INR L * exp (- beta) * (exp (- beta) + INR j)) with
      (INR L * exp (- beta) * exp (- beta) + (INR L * INR j) * exp (- beta)) by ring.
    assert (0 <= INR L * exp (- beta) * exp (- beta)) by (pose proof (pos_INR L); apply Rmult_le_pos; nra).
    assert (exp (- beta) <= (INR L * INR j) * exp (- beta)).
    { rewrite <- (Rmult_1_l (exp (- beta))) at 1. apply Rmult_le_compat_r; nra. }
    lra.
Qed.

(** Non-vacuity of T1: for every d >= 4, L >= 4 some head meets the hypotheses of (a) (eta <= 1/12),
    of (b) and the sharp bound (eta <= 1/120), and of the residual form (a) and (b). *)
Definition T1Satisfiable : Prop :=
  forall d L, (4 <= d)%nat -> (4 <= L)%nat ->
  (exists (h : head) eta, eta <= 1 / 12 /\ worst_error_le d L (head_output Softmax d h) eta) /\
  (exists (h : head) eta, eta <= 1 / 120 /\ worst_error_le d L (head_output Softmax d h) eta) /\
  (exists (h : head) eta, eta <= 1 / 12 /\ worst_residual_error_le d L (one_residual_layer d h) eta) /\
  (exists (h : head) eta, eta <= 1 / 120 /\ worst_residual_error_le d L (one_residual_layer d h) eta).

Lemma sufficiency_meets : forall d L eta, (4 <= d)%nat -> (4 <= L)%nat -> 0 < eta ->
  exists beta, cancel_error_bound L beta <= eta /\
  worst_error_le d L (head_output Softmax d (sufficiency_head d beta)) (cancel_error_bound L beta).
Proof.
  intros d L eta Hd HL He. destruct (cancel_error_bound_vanishes L eta He) as (b0 & Hb0).
  exists b0. split; [left; apply Hb0; lra | apply sufficiency_head_error; assumption].
Qed.

Theorem t1_satisfiable : T1Satisfiable.
Proof.
  intros d L Hd HL.
  destruct (sufficiency_meets d L (1 / 12) Hd HL ltac:(lra)) as (b1 & Hb1 & He1).
  destruct (sufficiency_meets d L (1 / 120) Hd HL ltac:(lra)) as (b2 & Hb2 & He2).
  split; [|split; [|split]].
  - exists (sufficiency_head d b1), (cancel_error_bound L b1). split; assumption.
  - exists (sufficiency_head d b2), (cancel_error_bound L b2). split; assumption.
  - exists (sufficiency_head d b1), (cancel_error_bound L b1). split; [assumption|].
    apply residual_error_is_single_layer_error. assumption.
  - exists (sufficiency_head d b2), (cancel_error_bound L b2). split; [assumption|].
    apply residual_error_is_single_layer_error. assumption.
Qed.

(** The softmax family as one statement: its worst-case error, its BOS mass and the bound's limit. *)
Definition SoftmaxFamilyLimits : Prop :=
  (forall d L beta, (4 <= d)%nat -> (4 <= L)%nat ->
     worst_error_le d L (head_output Softmax d (sufficiency_head d beta)) (cancel_error_bound L beta)) /\
  SufficiencyBosMass /\ ErrorBoundVanishes /\ T1Satisfiable.

Theorem softmax_family_limits : SoftmaxFamilyLimits.
Proof.
  split; [exact sufficiency_head_error | split; [exact sufficiency_bos_mass | split]].
  - exact cancel_error_bound_vanishes.
  - exact t1_satisfiable.
Qed.
