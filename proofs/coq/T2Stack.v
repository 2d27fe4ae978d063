(** T2 refuted for residual stacks of every depth (proofs/t2_multi_layer_existential.py,
    cancelling_heads.build_stack): the cancelling pair as the first layer, then depth - 1 layers of
    two zero heads. The zero layers add nothing to the residual stream, so the stack's residual
    error is the pair's, <= L e^-beta; the pair's heads put 1/(i+1) <= 1/2 on BOS at every
    non-trigger query i >= 1 of every input, and a zero head is uniform on every stream. *)
Require Import Reals Lra Lia List.
Require Import Sinks.Sums Sinks.Linear Sinks.Task Sinks.Heads Sinks.ReluHead Sinks.Cancelling.
Import ListNotations.
Open Scope R_scope.

(** The residual stream entering layer l: X_0 = X, X_{l+1} = X_l + MHA_l(X_l). *)
Fixpoint layer_input (kind : attention) (d : nat) (layers : list (list head)) (X : nat -> vec) (l : nat)
  : nat -> vec :=
  match layers, l with
  | hs :: rest, S l' => layer_input kind d rest (fun i r => X i r + layer_output kind d hs X i r) l'
  | _, _ => X
  end.

(** The claim refuted, for stacks of a given depth whose layers have >= 2 heads each: "there is
    a rate F -> 0 such that every such stack with worst-case residual error eta has a head, in
    some layer l, putting >= 1 - F(eta) on BOS at some non-trigger query of its layer's input". *)
Definition T2_stack_non_trigger (d L depth : nat) : Prop :=
  exists F : R -> R, vanishes_at_zero F /\
  forall (layers : list (list head)) (eta : R), length layers = depth ->
  (forall hs, In hs layers -> (2 <= length hs)%nat) ->
  worst_residual_error_le d L (stack_output Softmax d layers) eta ->
  exists l hs h j cs i, nth_error layers l = Some hs /\ In h hs /\ valid_trigger L j /\ in_box d L cs /\
    (1 <= i < L)%nat /\ i <> j /\ 1 - F eta <= softmax_weight d h (layer_input Softmax d layers (sequence d j cs) l) i 0.

(** The counterexample of depth n: the pair, then n - 1 layers of two zero heads. *)
Definition cancelling_deep_stack (beta : R) (n : nat) : list (list head) :=
  cancelling_pair beta :: repeat (repeat zero_head 2) (n - 1).

Lemma cancelling_deep_stack_error : forall d L beta n, (4 <= d)%nat -> (4 <= L)%nat ->
  worst_residual_error_le d L (stack_output Softmax d (cancelling_deep_stack beta n)) (cancel_error_bound L beta).
Proof.
  intros d L beta n Hd HL j cs i r Hj Hb Hi Hr. unfold cancelling_deep_stack. cbn [stack_output].
  rewrite zero_layers_output. unfold residual_target.
  pose proof (cancelling_pair_error d L beta Hd HL j cs i r Hj Hb Hi Hr) as H.
  replace (sequence d j cs i r + layer_output Softmax d (cancelling_pair beta) (sequence d j cs) i r
           - (sequence d j cs i r + target j (sequence d j cs) i r))
    with (layer_output Softmax d (cancelling_pair beta) (sequence d j cs) i r - target j (sequence d j cs) i r)
    by ring.
  exact H.
Qed.

Lemma cancelling_deep_stack_shape : forall beta n, (1 <= n)%nat ->
  length (cancelling_deep_stack beta n) = n /\ forall hs, In hs (cancelling_deep_stack beta n) -> (2 <= length hs)%nat.
Proof.
  intros beta n Hn. unfold cancelling_deep_stack. split.
  - simpl. rewrite repeat_length. lia.
  - intros hs [<- | Hin]; [simpl; lia|]. apply repeat_spec in Hin. subst hs. simpl. lia.
Qed.

(** Every head of every layer puts at most 1/2 on BOS at every non-trigger query i >= 1. *)
Lemma cancelling_deep_stack_bos_mass : forall d beta n l hs h j cs i, (4 <= d)%nat ->
  nth_error (cancelling_deep_stack beta n) l = Some hs -> In h hs -> (1 <= i)%nat -> i <> j ->
  softmax_weight d h (layer_input Softmax d (cancelling_deep_stack beta n) (sequence d j cs) l) i 0 <= 1 / 2.
Proof.
  intros d beta n l hs h j cs i Hd Hl Hin Hi Hij.
  assert (Hhalf : / INR (S i) <= 1 / 2).
  { assert (2 <= INR (S i)) by (replace 2 with (INR 2) by (simpl; ring); apply le_INR; lia).
    replace (1 / 2) with (/ 2) by field. apply Rinv_le_contravar; lra. }
  destruct l as [|l].
  - simpl in Hl. injection Hl as <-. simpl layer_input.
    destruct (cancelling_pair_bos_mass d beta j cs i h Hd Hin Hi Hij) as (-> & _). exact Hhalf.
  - cbn [nth_error] in Hl. apply nth_error_In, repeat_spec in Hl. subst hs. apply repeat_spec in Hin. subst h.
    rewrite zero_head_weight. exact Hhalf.
Qed.

Definition T2StackRefuted : Prop :=
  forall d L depth, (4 <= d)%nat -> (4 <= L)%nat -> (1 <= depth)%nat -> ~ T2_stack_non_trigger d L depth.

Theorem t2_stack_refuted : T2StackRefuted.
Proof.
  intros d L n Hd HL Hn (F & HF & Hclaim).
  destruct (HF (1 / 4) ltac:(lra)) as (delta & Hdelta & HFd).
  destruct (cancel_error_bound_vanishes L delta Hdelta) as (b0 & Hb0).
  assert (Hpos : 0 <= cancel_error_bound L b0)
    by (unfold cancel_error_bound; apply Rmult_le_pos; [apply pos_INR | left; apply exp_pos]).
  destruct (cancelling_deep_stack_shape b0 n Hn) as (Hlen & Hwide).
  destruct (Hclaim (cancelling_deep_stack b0 n) (cancel_error_bound L b0) Hlen Hwide
              (cancelling_deep_stack_error d L b0 n Hd HL))
    as (l & hs & h & j & cs & i & Hl & Hin & Hj & Hb & Hi & Hij & Hmass).
  pose proof (cancelling_deep_stack_bos_mass d b0 n l hs h j cs i Hd Hl Hin ltac:(lia) Hij) as Hhalf.
  assert (F (cancel_error_bound L b0) < 1 / 4) by (apply HFd; split; [assumption | apply Hb0; lra]).
  lra.
Qed.
