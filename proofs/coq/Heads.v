(** The model class of SPEC section 2 (constructions/attention.py): one attention head given by four
    real d x d matrices, softmax or ReLU weights, no positional encoding, no biases, no scaling;
    layers of several heads and residual stacks of layers. *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Task.
Import ListNotations.
Open Scope R_scope.

Record head := mk_head { W_Q : mat; W_K : mat; W_V : mat; W_O : mat }.

(** s_ik = (W_Q x_i) . (W_K x_k): a function of the two tokens' features only. *)
Definition score (d : nat) (h : head) (x y : vec) : R := dot d (matvec d (W_Q h) x) (matvec d (W_K h) y).

(** Causal softmax: a_ik = exp(s_ik) / sum_{k' <= i} exp(s_ik'). *)
Definition softmax_weight (d : nat) (h : head) (X : nat -> vec) (i k : nat) : R :=
  exp (score d h (X i) (X k)) / sum (S i) (fun k' => exp (score d h (X i) (X k'))).

(** ReLU attention: a_ik = ReLU(s_ik) / max(i, 1). *)
Definition relu_weight (d : nat) (h : head) (X : nat -> vec) (i k : nat) : R :=
  Rmax 0 (score d h (X i) (X k)) / INR (Nat.max i 1).

Inductive attention := Softmax | Relu.

Definition weight (kind : attention) : nat -> head -> (nat -> vec) -> nat -> nat -> R :=
  match kind with Softmax => softmax_weight | Relu => relu_weight end.

(** The value image u(x) = W_O W_V x. *)
Definition value (d : nat) (h : head) (x : vec) : vec := matvec d (W_O h) (matvec d (W_V h) x).

(** f(X)_i = W_O W_V sum_{k <= i} a_ik x_k. *)
Definition head_output (kind : attention) (d : nat) (h : head) : model := fun X i =>
  matvec d (W_O h) (matvec d (W_V h) (combine (S i) (weight kind d h X i) X)).

(** A layer of heads with output map W_O = [O_1 | ... | O_H] on the concatenated head outputs:
    the layer outputs sum_h O_h W_V^h sum_k a^h_ik x_k (each head's W_O is its block O_h). *)
Fixpoint layer_output (kind : attention) (d : nat) (hs : list head) : model := fun X i r =>
  match hs with
  | nil => 0
  | h :: rest => head_output kind d h X i r + layer_output kind d rest X i r
  end.

(** A residual stack: X_{l+1} = X_l + MHA_l(X_l). *)
Fixpoint stack_output (kind : attention) (d : nat) (layers : list (list head)) : model := fun X =>
  match layers with
  | nil => X
  | hs :: rest => stack_output kind d rest (fun i r => X i r + layer_output kind d hs X i r)
  end.

Lemma matvec_ext : forall d M x y r, (forall c, (c < d)%nat -> x c = y c) -> matvec d M x r = matvec d M y r.
Proof. intros. unfold matvec. apply sum_ext. intros c Hc. rewrite H by assumption. reflexivity. Qed.

(** Linearity: the output is the weighted sum of the keys' value images. *)
Lemma head_output_images : forall kind d h X i r,
  head_output kind d h X i r = sum (S i) (fun k => weight kind d h X i k * value d h (X k) r).
Proof.
  intros. unfold head_output, value.
  rewrite (matvec_ext d (W_O h) _ (combine (S i) (weight kind d h X i) (fun k => matvec d (W_V h) (X k))))
    by (intros; unfold combine at 2; apply matvec_combine).
  apply matvec_combine.
Qed.

Lemma softmax_output_images : forall d h X i r,
  head_output Softmax d h X i r = sum (S i) (fun k => softmax_weight d h X i k * value d h (X k) r).
Proof. intros. apply head_output_images. Qed.

Lemma relu_output_images : forall d h X i r,
  head_output Relu d h X i r = sum (S i) (fun k => relu_weight d h X i k * value d h (X k) r).
Proof. intros. apply head_output_images. Qed.

(** Inputs that agree on the d coordinates give the same score. *)
Lemma score_ext : forall d h x x' y y', (forall r, (r < d)%nat -> x r = x' r) ->
  (forall r, (r < d)%nat -> y r = y' r) -> score d h x y = score d h x' y'.
Proof.
  intros d h x x' y y' Hx Hy. unfold score, dot. apply sum_ext. intros r Hr.
  rewrite (matvec_ext d (W_Q h) x x'), (matvec_ext d (W_K h) y y') by assumption. reflexivity.
Qed.

(** ** Softmax rows lie on the simplex. *)
Lemma softmax_normaliser_pos : forall d h X i, 0 < sum (S i) (fun k' => exp (score d h (X i) (X k'))).
Proof.
  intros. simpl sum. assert (0 <= sum i (fun k' => exp (score d h (X i) (X k')))).
  { apply sum_nonneg. intros. left. apply exp_pos. }
  assert (0 < exp (score d h (X i) (X i))) by apply exp_pos. lra.
Qed.

Lemma softmax_weight_pos : forall d h X i k, 0 < softmax_weight d h X i k.
Proof.
  intros. unfold softmax_weight. apply Rdiv_lt_0_compat; [apply exp_pos | apply softmax_normaliser_pos].
Qed.

Lemma softmax_weights_sum : forall d h X i, sum (S i) (softmax_weight d h X i) = 1.
Proof.
  intros. unfold softmax_weight. unfold Rdiv.
  rewrite (sum_ext (S i) _ (fun k => / sum (S i) (fun k' => exp (score d h (X i) (X k'))) *
                                  exp (score d h (X i) (X k)))) by (intros; lra).
  rewrite sum_scale. apply Rinv_l. apply Rgt_not_eq, softmax_normaliser_pos.
Qed.

Definition SoftmaxRowsOnSimplex : Prop :=
  forall d (h : head) X i, (forall k, 0 < softmax_weight d h X i k) /\ sum (S i) (softmax_weight d h X i) = 1.

Theorem softmax_rows_on_simplex : SoftmaxRowsOnSimplex.
Proof. intros d h X i. split; [apply softmax_weight_pos | apply softmax_weights_sum]. Qed.

(** A head whose output block is zero outputs 0. *)
Lemma head_output_zero_block : forall kind d h X i r, W_O h = zero_mat -> head_output kind d h X i r = 0.
Proof. intros. unfold head_output. rewrite H. apply matvec_zero. Qed.
