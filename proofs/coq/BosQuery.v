(** T1 step 1 (proofs/bos_query_sees_only_bos.py): the BOS query sees only BOS, so its output is
    BOS's value image u_0 = W_O W_V x_0, which the target y_0 = 0 forces to |u_0|_inf <= eta. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Task Sinks.Heads.
Open Scope R_scope.

Lemma bos_query_weight : forall d h X, softmax_weight d h X 0 0 = 1.
Proof.
  intros. unfold softmax_weight. simpl sum. rewrite Rplus_0_l.
  field. apply Rgt_not_eq, exp_pos.
Qed.

Lemma bos_query_output : forall d h X r, head_output Softmax d h X 0%nat r = value d h (X 0%nat) r.
Proof.
  intros. rewrite head_output_images. simpl sum. simpl weight. rewrite bos_query_weight. lra.
Qed.

(** The lemma: a_00 = 1, o_0 = u_0, and |u_0|_inf <= eta for a head with worst-case error eta. *)
Definition BosQuerySeesOnlyBos : Prop :=
  forall d L (h : head) eta, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_error_le d L (head_output Softmax d h) eta ->
  (forall X, softmax_weight d h X 0 0 = 1 /\ forall r, head_output Softmax d h X 0%nat r = value d h (X 0%nat) r) /\
  (forall r, (r < d)%nat -> Rabs (value d h (bos d) r) <= eta).

Theorem bos_query_sees_only_bos : BosQuerySeesOnlyBos.
Proof.
  intros d L h eta Hd HL Herr. split.
  - intros X. split; [apply bos_query_weight | apply bos_query_output].
  - intros r Hr.
    assert (H := Herr 2%nat (fun _ _ => 0) 0%nat r ltac:(unfold valid_trigger; lia)
                      (equal_content_in_box d L _ (zero_content_in_box d)) ltac:(lia) Hr).
    rewrite bos_query_output, target_off_trigger in H by lia.
    rewrite sequence_bos in H. rewrite Rminus_0_r in H. exact H.
Qed.
