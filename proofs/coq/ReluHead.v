(** T3 (proofs/relu_construction_exact.py, constructions/relu_head.py): the ReLU head
      W_Q = E[0, trigger],  W_K = E[0, trigger] + E[0, content flag],  W_V = W_O = I
    (the numbers of relu_head.build(d)) has score s_ik = [x_i is the trigger] [x_k is not BOS], so
    the trigger row is 1/j on keys 1 .. j and 0 on BOS and every other row is 0: zero error on every
    input and zero weight on BOS at every query, for every d >= 4, L, j and all real contents.
    As layer 0 of a residual stack whose other heads and layers have zero output blocks it
    reproduces the residual target. *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Task Sinks.Heads.
Import ListNotations.
Open Scope R_scope.

Definition relu_W_Q (d : nat) : mat := unit_mat 0 trigger_flag.
Definition relu_W_K (d : nat) : mat := fun r c => unit_mat 0 trigger_flag r c + unit_mat 0 (content_flag d) r c.
Definition relu_head (d : nat) : head := mk_head (relu_W_Q d) (relu_W_K d) id_mat id_mat.

Lemma matvec_relu_W_K : forall d y r, (4 <= d)%nat ->
  matvec d (relu_W_K d) y r = if Nat.eqb r 0 then y trigger_flag + y (content_flag d) else 0.
Proof.
  intros d y r Hd. unfold matvec, relu_W_K.
  rewrite (sum_ext d _ (fun c => unit_mat 0 trigger_flag r c * y c + unit_mat 0 (content_flag d) r c * y c))
    by (intros; ring).
  rewrite sum_plus.
  fold (matvec d (unit_mat 0 trigger_flag) y r) (matvec d (unit_mat 0 (content_flag d)) y r).
  rewrite !matvec_unit by (unfold trigger_flag, content_flag; lia). destruct (Nat.eqb r 0); ring.
Qed.

(** The ReLU head's score: s(x, y) = x_trigger (y_trigger + y_content). *)
Lemma relu_score : forall d x y, (4 <= d)%nat ->
  score d (relu_head d) x y = x trigger_flag * (y trigger_flag + y (content_flag d)).
Proof.
  intros d x y Hd. unfold score, dot. simpl W_Q. simpl W_K.
  rewrite (sum_single d 0); [| lia |].
  - unfold relu_W_Q. rewrite matvec_unit, matvec_relu_W_K by (unfold trigger_flag; lia). simpl. ring.
  - intros k _ Hk. unfold relu_W_Q. rewrite matvec_unit by (unfold trigger_flag; lia).
    destruct (Nat.eqb_spec k 0); [lia | ring].
Qed.

Lemma relu_value : forall d x r, (r < d)%nat -> value d (relu_head d) x r = x r.
Proof.
  intros. unfold value. simpl W_O. simpl W_V. rewrite matvec_id by assumption. apply matvec_id. assumption.
Qed.

(** ReLU rows with non-positive scores vanish, and so does their output (relu_rows_can_vanish). *)
Definition ReluRowsCanVanish : Prop :=
  forall d (h : head) X i, (forall k, (k <= i)%nat -> score d h (X i) (X k) <= 0) ->
  (forall k, (k <= i)%nat -> relu_weight d h X i k = 0) /\ (forall r, head_output Relu d h X i r = 0).

Theorem relu_rows_can_vanish : ReluRowsCanVanish.
Proof.
  intros d h X i Hs.
  assert (Hw : forall k, (k <= i)%nat -> relu_weight d h X i k = 0).
  { intros k Hk. unfold relu_weight. rewrite Rmax_left by (apply Hs; assumption). unfold Rdiv. ring. }
  split; [exact Hw|]. intros r. rewrite relu_output_images. apply sum_zero. intros k Hk.
  rewrite Hw by lia. ring.
Qed.

Section Exact.
Variables (d L j : nat) (cs : nat -> content).
Hypothesis Hd : (4 <= d)%nat.
Hypothesis Hj : valid_trigger L j.
Let X := sequence d j cs.

Lemma relu_scores_off_trigger : forall i k, i <> j -> score d (relu_head d) (X i) (X k) = 0.
Proof.
  intros i k Hij. rewrite relu_score by assumption. unfold X, sequence.
  destruct (Nat.eqb_spec i 0); [unfold bos, trigger_flag; simpl; ring|].
  destruct (Nat.eqb_spec i j); [lia|]. rewrite content_trigger_flag by assumption. ring.
Qed.

Lemma relu_scores_at_trigger : forall k, (1 <= k <= j)%nat -> score d (relu_head d) (X j) (X k) = 1.
Proof.
  intros k Hk. unfold valid_trigger in Hj. rewrite relu_score by assumption. unfold X.
  rewrite sequence_trigger, trigger_trigger_flag by lia.
  destruct (Nat.eq_dec k j) as [->|Hkj].
  - rewrite sequence_trigger, trigger_trigger_flag, trigger_content_flag by lia. ring.
  - rewrite sequence_content, content_trigger_flag, content_content_flag by lia. ring.
Qed.

Lemma relu_bos_score_at_trigger : score d (relu_head d) (X j) (X 0%nat) = 0.
Proof.
  unfold valid_trigger in Hj. rewrite relu_score by assumption. unfold X.
  rewrite sequence_bos, bos_trigger_flag, bos_content_flag by assumption. ring.
Qed.

Lemma relu_bos_weight_zero : forall i, relu_weight d (relu_head d) X i 0 = 0.
Proof.
  intros i. unfold relu_weight. destruct (Nat.eq_dec i j) as [->|Hij].
  - rewrite relu_bos_score_at_trigger, Rmax_left by lra. unfold Rdiv. ring.
  - rewrite relu_scores_off_trigger, Rmax_left by (auto || lra). unfold Rdiv. ring.
Qed.

Lemma relu_rows_off_trigger_zero : forall i k, i <> j -> relu_weight d (relu_head d) X i k = 0.
Proof. intros i k Hij. unfold relu_weight. rewrite relu_scores_off_trigger, Rmax_left by (auto || lra). unfold Rdiv. ring. Qed.

Lemma relu_output_exact : forall i r, (r < d)%nat ->
  head_output Relu d (relu_head d) X i r = target j X i r.
Proof.
  intros i r Hr. unfold valid_trigger in Hj. rewrite relu_output_images.
  destruct (Nat.eq_dec i j) as [->|Hij].
  - unfold target. rewrite Nat.eqb_refl, sum_first, relu_bos_weight_zero, Rmult_0_l, Rplus_0_l, <- sum_scale.
    apply sum_ext. intros k Hk. rewrite relu_value by assumption. f_equal.
    unfold relu_weight. rewrite relu_scores_at_trigger by lia. rewrite Rmax_right by lra.
    replace (Nat.max j 1) with j by lia. unfold Rdiv. ring.
  - rewrite target_off_trigger by assumption. apply sum_zero. intros k _.
    rewrite relu_rows_off_trigger_zero by assumption. ring.
Qed.
End Exact.

Definition T3_single_head : Prop :=
  forall d L j cs, (4 <= d)%nat -> valid_trigger L j ->
  (forall i r, (i < L)%nat -> (r < d)%nat ->
     head_output Relu d (relu_head d) (sequence d j cs) i r = target j (sequence d j cs) i r) /\
  (forall i, relu_weight d (relu_head d) (sequence d j cs) i 0 = 0) /\
  (forall i k, i <> j -> relu_weight d (relu_head d) (sequence d j cs) i k = 0).

Theorem relu_head_exact : T3_single_head.
Proof.
  intros d L j cs Hd Hj. split; [|split].
  - intros i r _ Hr. apply (relu_output_exact d L j cs Hd Hj i r Hr).
  - apply (relu_bos_weight_zero d j cs Hd).
  - apply (relu_rows_off_trigger_zero d j cs Hd).
Qed.

(** Zero error on every input of the task, for every d >= 4 and L. *)
Corollary relu_head_zero_error : forall d L, (4 <= d)%nat -> worst_error_le d L (head_output Relu d (relu_head d)) 0.
Proof.
  intros d L Hd j cs i r Hj _ _ Hr. rewrite (relu_output_exact d L j cs Hd Hj i r Hr).
  unfold Rminus. rewrite Rplus_opp_r, Rabs_R0. lra.
Qed.

(** ** The residual stack of relu_head.build_stack(d, layers, heads). *)
Definition zero_head : head := mk_head zero_mat zero_mat zero_mat zero_mat.

Definition relu_stack (d layers heads : nat) : list (list head) :=
  (relu_head d :: repeat zero_head (heads - 1)) :: repeat (repeat zero_head heads) (layers - 1).

Lemma zero_heads_output : forall kind d n X i r, layer_output kind d (repeat zero_head n) X i r = 0.
Proof.
  induction n as [|n IH]; intros; simpl; [reflexivity|].
  rewrite IH, head_output_zero_block by reflexivity. ring.
Qed.

Lemma zero_layers_output : forall kind d n m X i r, stack_output kind d (repeat (repeat zero_head n) m) X i r = X i r.
Proof.
  induction m as [|m IH]; intros; simpl; [reflexivity|].
  rewrite IH, zero_heads_output. ring.
Qed.

Definition T3_stack : Prop :=
  forall d L j cs layers heads, (4 <= d)%nat -> (1 <= layers)%nat -> (1 <= heads)%nat -> valid_trigger L j ->
  forall i r, (i < L)%nat -> (r < d)%nat ->
  stack_output Relu d (relu_stack d layers heads) (sequence d j cs) i r = residual_target j (sequence d j cs) i r.

Theorem relu_stack_exact : T3_stack.
Proof.
  intros d L j cs layers heads Hd Hl Hh Hj i r Hi Hr. unfold relu_stack. simpl stack_output.
  rewrite zero_layers_output. simpl layer_output. rewrite zero_heads_output.
  rewrite (relu_output_exact d L j cs Hd Hj i r Hr). unfold residual_target. ring.
Qed.

(** T3 as one statement: the single head and its residual stack. *)
Theorem relu_construction_exact : T3_single_head /\ T3_stack.
Proof. exact (conj relu_head_exact relu_stack_exact). Qed.
