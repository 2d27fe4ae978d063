(** T2 refuted (proofs/t2_multi_layer_existential.py, constructions/cancelling_heads.py): the
    two-head cancelling pair. Both heads have W_K = E[0, BOS] and W_V = I - E[BOS, BOS]; head 1
    has W_Q = -beta E[0, trigger] and output block I, head 2 has W_Q = +beta E[0, trigger] and
    output block -I (W_O = [I, -I]). So s_ik = +-beta [x_i is the trigger] [k = 0]: off the
    trigger both heads are uniform over 0 .. i (BOS mass 1/(i+1) <= 1/2) and cancel exactly; at
    the trigger the error is S_j (1/(j + e^-b) - 1/(j + e^b) - 1/j), at most L e^-beta in every
    coordinate. The error tends to 0 while no head sinks at a non-trigger query. *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.ReluHead.
Import ListNotations.
Open Scope R_scope.

Definition cancel_W_Q (s : R) : mat := fun r c => s * unit_mat 0 trigger_flag r c.
Definition cancel_W_K : mat := unit_mat 0 bos_flag.
Definition cancel_W_V : mat := fun r c => id_mat r c - unit_mat bos_flag bos_flag r c.
Definition neg_id_mat : mat := fun r c => - id_mat r c.

Definition cancel_head (s : R) (out : mat) : head := mk_head (cancel_W_Q s) cancel_W_K cancel_W_V out.
Definition cancelling_pair (beta : R) : list head :=
  [cancel_head (- beta) id_mat; cancel_head beta neg_id_mat].

(** The explicit function of beta that bounds the worst-case error. *)
Definition cancel_error_bound (L : nat) (beta : R) : R := INR L * exp (- beta).

Section Pair.
Variables (d : nat) (s : R) (out : mat).
Hypothesis Hd : (4 <= d)%nat.

Lemma cancel_score : forall x y, score d (cancel_head s out) x y = s * x trigger_flag * y bos_flag.
Proof.
  intros x y. unfold score, dot. simpl W_Q. simpl W_K.
  rewrite (sum_single d 0); [| lia |].
  - unfold cancel_W_Q, cancel_W_K, matvec.
    rewrite (sum_ext d _ (fun c => s * (unit_mat 0 trigger_flag 0%nat c * x c))) by (intros; ring).
    rewrite sum_scale. fold (matvec d (unit_mat 0 trigger_flag) x 0%nat) (matvec d (unit_mat 0 bos_flag) y 0%nat).
    rewrite !matvec_unit by (unfold trigger_flag, bos_flag; lia). simpl. ring.
  - intros k _ Hk. unfold cancel_W_K. rewrite matvec_unit by (unfold bos_flag; lia).
    destruct (Nat.eqb_spec k 0); [lia | ring].
Qed.

Lemma cancel_W_V_apply : forall x r, (r < d)%nat -> matvec d cancel_W_V x r = if Nat.eqb r 0 then 0 else x r.
Proof.
  intros x r Hr. unfold matvec, cancel_W_V.
  rewrite (sum_ext d _ (fun c => id_mat r c * x c + - (unit_mat bos_flag bos_flag r c * x c))) by (intros; ring).
  rewrite sum_plus, sum_opp.
  fold (matvec d id_mat x r) (matvec d (unit_mat bos_flag bos_flag) x r).
  rewrite matvec_id, matvec_unit by (unfold bos_flag; lia).
  unfold bos_flag. destruct (Nat.eqb_spec r 0) as [->|]; ring.
Qed.

(** Off the trigger every score is 0: both heads are uniform over keys 0 .. i. *)
Lemma cancel_weight_off_trigger : forall j cs i k, i <> j ->
  softmax_weight d (cancel_head s out) (sequence d j cs) i k = / INR (S i).
Proof.
  intros j cs i k Hij.
  assert (Hs : forall k', score d (cancel_head s out) (sequence d j cs i) (sequence d j cs k') = 0).
  { intros k'. rewrite cancel_score. unfold sequence at 1.
    destruct (Nat.eqb_spec i 0); [unfold bos, trigger_flag; simpl; ring|].
    destruct (Nat.eqb_spec i j); [lia|]. rewrite content_trigger_flag by assumption. ring. }
  unfold softmax_weight. rewrite Hs, (sum_const (S i) 1) by (intros; rewrite Hs; apply exp_0).
  rewrite exp_0. field. apply not_0_INR. lia.
Qed.

(** At the trigger: BOS gets e^s/(e^s + j), each of the keys 1 .. j gets 1/(e^s + j). *)
Lemma cancel_normaliser_at_trigger : forall j cs, (1 <= j)%nat ->
  sum (S j) (fun k => exp (score d (cancel_head s out) (sequence d j cs j) (sequence d j cs k))) = exp s + INR j.
Proof.
  intros j cs Hj. rewrite sum_first, cancel_score, (sum_const j 1).
  - rewrite sequence_trigger, sequence_bos, trigger_trigger_flag by lia. unfold bos, bos_flag. simpl.
    replace (s * 1 * 1) with s by ring. ring.
  - intros k Hk. rewrite cancel_score, sequence_trigger, trigger_trigger_flag by lia.
    rewrite sequence_bos_flag, Rmult_0_r by lia. apply exp_0.
Qed.
End Pair.

Lemma cancel_weight_at_trigger : forall d s out j cs k, (4 <= d)%nat -> (1 <= j)%nat -> (k <= j)%nat ->
  softmax_weight d (cancel_head s out) (sequence d j cs) j k = (if Nat.eqb k 0 then exp s else 1) / (exp s + INR j).
Proof.
  intros d s out j cs k Hd Hj Hk. unfold softmax_weight. rewrite cancel_normaliser_at_trigger by assumption.
  f_equal. rewrite cancel_score, sequence_trigger, trigger_trigger_flag by lia.
  destruct (Nat.eqb_spec k 0) as [->|Hk0].
  - rewrite sequence_bos. unfold bos, bos_flag. simpl. f_equal. ring.
  - rewrite sequence_bos_flag, Rmult_0_r by lia. apply exp_0.
Qed.

(** The value images: the token without its BOS flag, times +1 (head 1) or -1 (head 2). *)
Lemma cancel_value_pos : forall d s x r, (r < d)%nat ->
  value d (cancel_head s id_mat) x r = matvec d cancel_W_V x r.
Proof. intros. unfold value, cancel_head. simpl W_O. simpl W_V. rewrite matvec_id by assumption. reflexivity. Qed.

Lemma cancel_value_neg : forall d s x r, (r < d)%nat ->
  value d (cancel_head s neg_id_mat) x r = - matvec d cancel_W_V x r.
Proof.
  intros. unfold value, cancel_head. simpl W_O. simpl W_V. unfold neg_id_mat.
  rewrite matvec_opp, matvec_id by assumption. reflexivity.
Qed.

Lemma cancel_values_of_sequence : forall d j cs k r, (4 <= d)%nat -> (r < d)%nat ->
  matvec d cancel_W_V (sequence d j cs k) r = if Nat.eqb k 0 then 0 else sequence d j cs k r.
Proof.
  intros d j cs k r Hd Hr. rewrite cancel_W_V_apply by assumption.
  destruct (Nat.eqb_spec k 0) as [->|Hk].
  - rewrite sequence_bos. unfold bos. destruct (Nat.eqb r 0); reflexivity.
  - destruct (Nat.eqb_spec r 0) as [->|]; [|reflexivity].
    symmetry. apply (sequence_bos_flag d j cs k Hd). lia.
Qed.

(** One head's output at the trigger: sigma S_j / (e^s + j), S_j = sum of the tokens 1 .. j. *)
Lemma cancel_output_at_trigger : forall d s out sigma j cs r, (4 <= d)%nat -> (1 <= j)%nat -> (r < d)%nat ->
  (forall x, value d (cancel_head s out) x r = sigma * matvec d cancel_W_V x r) ->
  head_output Softmax d (cancel_head s out) (sequence d j cs) j r
  = sigma / (exp s + INR j) * sum j (fun k => sequence d j cs (S k) r).
Proof.
  intros d s out sigma j cs r Hd Hj Hr Hv. rewrite softmax_output_images, sum_first, <- sum_scale.
  rewrite Hv, cancel_values_of_sequence by assumption. simpl Nat.eqb. rewrite Rmult_0_r, Rmult_0_r, Rplus_0_l.
  apply sum_ext. intros k Hk. rewrite cancel_weight_at_trigger, Hv, cancel_values_of_sequence by lia.
  simpl Nat.eqb. unfold Rdiv. ring.
Qed.

Lemma cancelling_output_at_trigger : forall d beta j cs r, (4 <= d)%nat -> (1 <= j)%nat -> (r < d)%nat ->
  layer_output Softmax d (cancelling_pair beta) (sequence d j cs) j r
  = (1 / (exp (- beta) + INR j) - 1 / (exp beta + INR j)) * sum j (fun k => sequence d j cs (S k) r).
Proof.
  intros d beta j cs r Hd Hj Hr. unfold cancelling_pair. simpl layer_output.
  rewrite (cancel_output_at_trigger d (- beta) id_mat 1), (cancel_output_at_trigger d beta neg_id_mat (-1));
    try assumption.
  - unfold Rdiv. ring.
  - intros. rewrite cancel_value_neg by assumption. ring.
  - intros. rewrite cancel_value_pos by assumption. ring.
Qed.

Lemma cancelling_output_off_trigger : forall d beta j cs i r, (4 <= d)%nat -> i <> j -> (r < d)%nat ->
  layer_output Softmax d (cancelling_pair beta) (sequence d j cs) i r = 0.
Proof.
  intros d beta j cs i r Hd Hij Hr. unfold cancelling_pair. simpl layer_output.
  rewrite !softmax_output_images, Rplus_0_r, <- sum_plus. apply sum_zero. intros k _.
  rewrite !cancel_weight_off_trigger by assumption. rewrite cancel_value_neg, cancel_value_pos by assumption. ring.
Qed.


(** |(1/(e^-b + J) - 1/(e^b + J)) S - S/J| = |S| (e^-b/(J + e^-b) + J/(J + e^b)) / J <= L e^-b
    for |S| <= J, J >= 2 and J + 1 <= L. *)
Lemma trigger_error_bound : forall J Lr b S, 2 <= J -> J + 1 <= Lr -> Rabs S <= J ->
  Rabs ((1 / (exp (- b) + J) - 1 / (exp b + J)) * S - / J * S) <= Lr * exp (- b).
Proof.
  intros J Lr b S HJ HL HS.
  set (E := exp (- b)). set (F := exp b).
  assert (HE : 0 < E) by apply exp_pos. assert (HF : 0 < F) by apply exp_pos.
  assert (HEF : E * F = 1) by (unfold E, F; rewrite exp_Ropp; field; apply Rgt_not_eq, exp_pos).
  set (g := E / (J * (E + J)) + 1 / (F + J)).
  assert (Hg : 0 <= g).
  { unfold g. assert (0 < E / (J * (E + J))) by (apply Rdiv_lt_0_compat; nra).
    assert (0 < 1 / (F + J)) by (apply Rdiv_lt_0_compat; lra). lra. }
  replace ((1 / (E + J) - 1 / (F + J)) * S - / J * S) with (- (g * S)) by (unfold g; field; lra).
  rewrite Rabs_Ropp, Rabs_mult, (Rabs_pos_eq g Hg).
  apply Rle_trans with (g * J); [apply Rmult_le_compat_l; assumption|].
  replace (g * J) with (E / (E + J) + J / (F + J)) by (unfold g; field; lra).
  assert (H1 : E / (E + J) <= E / 2) by (apply div_le_of_mul; [lra | unfold Rdiv; nra]).
  assert (H2 : J / (F + J) <= J * E).
  { apply div_le_of_mul; [lra|].
    replace (J * E * (F + J)) with (J * (E * F) + J * J * E) by ring. rewrite HEF. nra. }
  assert (0 <= E * (Lr - J - 1)) by (apply Rmult_le_pos; lra). lra.
Qed.

Lemma error_le_mono : forall d L f y eta eta', eta <= eta' -> error_le d L f y eta -> error_le d L f y eta'.
Proof. intros d L f y eta eta' Hle H j cs i r Hj Hb Hi Hr. specialize (H j cs i r Hj Hb Hi Hr). lra. Qed.

(** Worst-case error <= L e^-beta on every input, for every real beta. *)
Theorem cancelling_pair_error : forall d L beta, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_error_le d L (layer_output Softmax d (cancelling_pair beta)) (cancel_error_bound L beta).
Proof.
  intros d L beta Hd HL j cs i r Hj Hb Hi Hr. unfold cancel_error_bound. unfold valid_trigger in Hj.
  destruct (Nat.eq_dec i j) as [->|Hij].
  - rewrite cancelling_output_at_trigger by lia. unfold target. rewrite Nat.eqb_refl.
    apply trigger_error_bound.
    + replace 2 with (INR 2) by (simpl; ring). apply le_INR. lia.
    + rewrite <- S_INR. apply le_INR. lia.
    + eapply Rle_trans; [apply sum_abs|]. rewrite <- (Rmult_1_r (INR j)), <- (sum_const j 1 (fun _ => 1)) by auto.
      apply sum_le. intros k Hk. apply (sequence_bounded d L); [assumption | assumption | lia].
  - rewrite cancelling_output_off_trigger, target_off_trigger by assumption.
    rewrite Rminus_0_r, Rabs_R0. apply Rmult_le_pos; [apply pos_INR | left; apply exp_pos].
Qed.

(** Every head of the pair puts exactly 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1. *)
Theorem cancelling_pair_bos_mass : forall d beta j cs i h, (4 <= d)%nat -> In h (cancelling_pair beta) ->
  (1 <= i)%nat -> i <> j ->
  softmax_weight d h (sequence d j cs) i 0 = / INR (S i) /\ / INR (S i) <= 1 / 2.
Proof.
  intros d beta j cs i h Hd Hin Hi Hij.
  assert (Hhalf : / INR (S i) <= 1 / 2).
  { assert (2 <= INR (S i)) by (replace 2 with (INR 2) by (simpl; ring); apply le_INR; lia).
    replace (1 / 2) with (/ 2) by field. apply Rinv_le_contravar; lra. }
  split; [|exact Hhalf].
  destruct Hin as [<- | [<- | []]]; apply cancel_weight_off_trigger; assumption.
Qed.

(** Head 2's sink: it puts e^b/(e^b + j) on BOS at the trigger query only. *)
Lemma cancelling_head2_at_trigger : forall d beta j cs, (4 <= d)%nat -> (1 <= j)%nat ->
  softmax_weight d (cancel_head beta neg_id_mat) (sequence d j cs) j 0 = exp beta / (exp beta + INR j).
Proof. intros. rewrite cancel_weight_at_trigger by lia. reflexivity. Qed.

(** The bound tends to 0 as beta grows: L e^-beta < e once beta >= L/e + 1 (1 + beta <= e^beta). *)
Definition ErrorBoundVanishes : Prop :=
  forall L e, 0 < e -> exists beta0, forall beta, beta0 <= beta -> cancel_error_bound L beta < e.

Theorem cancel_error_bound_vanishes : ErrorBoundVanishes.
Proof.
  intros L e He. exists (INR L / e + 1). intros beta Hb. unfold cancel_error_bound.
  pose proof (pos_INR L) as HL.
  assert (HLe : 0 <= INR L / e) by (apply Rmult_le_pos; [lra | left; apply Rinv_0_lt_compat; lra]).
  pose proof (exp_ge_1_plus beta ltac:(lra)) as Hexp.
  rewrite exp_Ropp. apply Rmult_lt_reg_r with (exp beta); [apply exp_pos|].
  rewrite Rmult_assoc, Rinv_l, Rmult_1_r by (apply Rgt_not_eq, exp_pos).
  assert (INR L = e * (INR L / e)) by (field; lra).
  assert (e * (INR L / e) < e * exp beta) by (apply Rmult_lt_compat_l; lra). lra.
Qed.

(** The claim refuted: "there is a rate F -> 0 such that every softmax layer of H >= 2 heads with
    worst-case error eta has some head putting >= 1 - F(eta) on BOS at some non-trigger query". *)
Definition vanishes_at_zero (F : R -> R) : Prop :=
  forall e, 0 < e -> exists delta, 0 < delta /\ forall eta, 0 <= eta < delta -> F eta < e.

Definition T2_non_trigger (d L : nat) : Prop :=
  exists F : R -> R, vanishes_at_zero F /\
  forall (hs : list head) (eta : R), (2 <= length hs)%nat ->
  worst_error_le d L (layer_output Softmax d hs) eta ->
  exists h j cs i, In h hs /\ valid_trigger L j /\ in_box d L cs /\ (1 <= i < L)%nat /\ i <> j /\
    1 - F eta <= softmax_weight d h (sequence d j cs) i 0.

(** For every eta > 0 a two-head layer has worst-case error <= eta while every head puts at most
    1/2 on BOS at every non-trigger query i >= 1 of every input. *)
Theorem cancelling_pair_counterexample : forall d L eta, (4 <= d)%nat -> (4 <= L)%nat -> 0 < eta ->
  exists hs, length hs = 2%nat /\ worst_error_le d L (layer_output Softmax d hs) eta /\
  forall h j cs i, In h hs -> (1 <= i)%nat -> i <> j -> softmax_weight d h (sequence d j cs) i 0 <= 1 / 2.
Proof.
  intros d L eta Hd HL He. destruct (cancel_error_bound_vanishes L eta He) as (b0 & Hb0).
  exists (cancelling_pair b0). split; [reflexivity | split].
  - apply error_le_mono with (cancel_error_bound L b0); [left; apply Hb0; lra|].
    apply cancelling_pair_error; assumption.
  - intros h j cs i Hin Hi Hij. destruct (cancelling_pair_bos_mass d b0 j cs i h Hd Hin Hi Hij) as (-> & H). exact H.
Qed.

Definition T2Refuted : Prop := forall d L, (4 <= d)%nat -> (4 <= L)%nat -> ~ T2_non_trigger d L.

Theorem t2_multi_layer_existential : T2Refuted.
Proof.
  intros d L Hd HL (F & HF & Hclaim).
  destruct (HF (1 / 4) ltac:(lra)) as (delta & Hdelta & HFd).
  destruct (cancel_error_bound_vanishes L delta Hdelta) as (b0 & Hb0).
  assert (Hpos : 0 <= cancel_error_bound L b0)
    by (unfold cancel_error_bound; apply Rmult_le_pos; [apply pos_INR | left; apply exp_pos]).
  destruct (Hclaim (cancelling_pair b0) (cancel_error_bound L b0) ltac:(simpl; lia)
              (cancelling_pair_error d L b0 Hd HL)) as (h & j & cs & i & Hin & Hj & Hb & Hi & Hij & Hmass).
  destruct (cancelling_pair_bos_mass d b0 j cs i h Hd Hin ltac:(lia) Hij) as (Hw & Hhalf).
  assert (F (cancel_error_bound L b0) < 1 / 4) by (apply HFd; split; [assumption | apply Hb0; lra]).
  lra.
Qed.

(** The same pair in a residual stack (cancelling_heads.build_stack): a second layer of two zero
    heads adds nothing, so the residual error is the same, and its heads are uniform too. *)
Definition cancelling_stack (beta : R) : list (list head) := [cancelling_pair beta; [zero_head; zero_head]].

Lemma zero_head_weight : forall d Y i k, softmax_weight d zero_head Y i k = / INR (S i).
Proof.
  intros. assert (Hs : forall x y, score d zero_head x y = 0).
  { intros. unfold score, dot. apply sum_zero. intros. simpl W_Q. rewrite matvec_zero. ring. }
  unfold softmax_weight. rewrite Hs, (sum_const (S i) 1) by (intros; rewrite Hs; apply exp_0).
  rewrite exp_0. field. apply not_0_INR. lia.
Qed.

Lemma cancelling_stack_output : forall d beta X i r,
  stack_output Softmax d (cancelling_stack beta) X i r = X i r + layer_output Softmax d (cancelling_pair beta) X i r.
Proof.
  intros. unfold cancelling_stack. simpl stack_output. unfold cancelling_pair. simpl layer_output.
  rewrite !(head_output_zero_block Softmax d zero_head) by reflexivity. ring.
Qed.

Theorem cancelling_stack_error : forall d L beta, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_residual_error_le d L (stack_output Softmax d (cancelling_stack beta)) (cancel_error_bound L beta) /\
  forall Y i, (1 <= i)%nat -> softmax_weight d zero_head Y i 0 = / INR (S i) /\ / INR (S i) <= 1 / 2.
Proof.
  intros d L beta Hd HL. split.
  - intros j cs i r Hj Hb Hi Hr. pose proof (cancelling_pair_error d L beta Hd HL j cs i r Hj Hb Hi Hr) as H.
    unfold residual_target. rewrite cancelling_stack_output.
    replace (sequence d j cs i r + layer_output Softmax d (cancelling_pair beta) (sequence d j cs) i r
             - (sequence d j cs i r + target j (sequence d j cs) i r))
      with (layer_output Softmax d (cancelling_pair beta) (sequence d j cs) i r - target j (sequence d j cs) i r)
      by ring.
    exact H.
  - intros Y i Hi. split; [apply zero_head_weight|].
    assert (2 <= INR (S i)) by (replace 2 with (INR 2) by (simpl; ring); apply le_INR; lia).
    replace (1 / 2) with (/ 2) by field. apply Rinv_le_contravar; lra.
Qed.

(** The counterexample's facts as one statement: error <= L e^-beta in one layer and in the residual
    stack, and every head at most 1/2 on BOS at every non-trigger query i >= 1. *)
Definition CancellingPairBounds : Prop :=
  forall d L beta, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_error_le d L (layer_output Softmax d (cancelling_pair beta)) (cancel_error_bound L beta) /\
  (forall j cs i h, In h (cancelling_pair beta) -> (1 <= i)%nat -> i <> j ->
     softmax_weight d h (sequence d j cs) i 0 <= 1 / 2) /\
  worst_residual_error_le d L (stack_output Softmax d (cancelling_stack beta)) (cancel_error_bound L beta).

Theorem cancelling_pair_bounds : CancellingPairBounds.
Proof.
  intros d L beta Hd HL. split; [apply cancelling_pair_error; assumption | split].
  - intros j cs i h Hin Hi Hij. destruct (cancelling_pair_bos_mass d beta j cs i h Hd Hin Hi Hij) as (-> & H).
    exact H.
  - apply cancelling_stack_error; assumption.
Qed.
