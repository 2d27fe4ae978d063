(** t1_one_residual_layer (proofs/t2_open_questions.py, question (c)): one softmax head in one
    residual layer inherits T1 verbatim, since the residual error x_i + o_i - (x_i + y_i) is the
    non-residual error o_i - y_i of the same head. *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Task Sinks.Heads Sinks.FlagSum Sinks.T1.
Import ListNotations.
Open Scope R_scope.

(** The stack of one layer holding one head: X + head(X). *)
Definition one_residual_layer (d : nat) (h : head) : model := stack_output Softmax d [[h]].

Lemma one_residual_layer_output : forall d h X i r,
  one_residual_layer d h X i r = X i r + head_output Softmax d h X i r.
Proof. intros. unfold one_residual_layer. simpl. ring. Qed.

Lemma residual_error_is_single_layer_error : forall d L h eta,
  worst_residual_error_le d L (one_residual_layer d h) eta <-> worst_error_le d L (head_output Softmax d h) eta.
Proof.
  intros d L h eta. unfold worst_residual_error_le, worst_error_le, error_le, residual_target.
  split; intros H j cs i r Hj Hb Hi Hr; specialize (H j cs i r Hj Hb Hi Hr);
    rewrite one_residual_layer_output in *;
    [replace (head_output Softmax d h (sequence d j cs) i r - target j (sequence d j cs) i r) with
       (sequence d j cs i r + head_output Softmax d h (sequence d j cs) i r -
        (sequence d j cs i r + target j (sequence d j cs) i r)) by ring
    | replace (sequence d j cs i r + head_output Softmax d h (sequence d j cs) i r -
        (sequence d j cs i r + target j (sequence d j cs) i r)) with
       (head_output Softmax d h (sequence d j cs) i r - target j (sequence d j cs) i r) by ring];
    exact H.
Qed.

Definition T1_residual : Prop :=
  (forall d L (h : head) eta, (4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->
   worst_residual_error_le d L (one_residual_layer d h) eta ->
   forall j cs i, valid_trigger L j -> in_box d L cs -> (1 <= i < j)%nat ->
   1 - f_pre eta <= softmax_weight d h (sequence d j cs) i 0) /\
  (forall d L (h : head) eta, (4 <= d)%nat -> (5 <= L)%nat -> eta <= 1 / 120 ->
   worst_residual_error_le d L (one_residual_layer d h) eta ->
   forall j cs i, valid_trigger L j -> in_box d L cs -> (i < L)%nat -> i <> j ->
   1 - f_all eta <= softmax_weight d h (sequence d j cs) i 0) /\
  (forall d L (h : head), (4 <= d)%nat -> (4 <= L)%nat -> ~ worst_residual_error_le d L (one_residual_layer d h) 0).

Theorem t1_one_residual_layer : T1_residual.
Proof.
  split; [|split].
  - intros d L h eta Hd HL He Herr. apply residual_error_is_single_layer_error in Herr.
    exact (t1a_pre_trigger d L h eta Hd HL He Herr).
  - intros d L h eta Hd HL He Herr. apply residual_error_is_single_layer_error in Herr.
    exact (t1b_every_non_trigger_query d L h eta Hd HL He Herr).
  - intros d L h Hd HL Herr. apply residual_error_is_single_layer_error in Herr.
    exact (t1c_exact_is_impossible d L h Hd HL Herr).
Qed.
