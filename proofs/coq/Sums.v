(** Finite sums over k < n, and the few facts about them the proofs use. *)
Require Import Reals Lra Lia.
Open Scope R_scope.

(** [sum n f] is f 0 + ... + f (n-1). *)
Fixpoint sum (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 0
  | S n' => sum n' f + f n'
  end.

Lemma sum_ext : forall n f g, (forall k, (k < n)%nat -> f k = g k) -> sum n f = sum n g.
Proof.
  induction n as [|n IH]; intros f g H; simpl; [reflexivity|].
  rewrite (IH f g) by (intros; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma sum_plus : forall n f g, sum n (fun k => f k + g k) = sum n f + sum n g.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_scale : forall n c f, sum n (fun k => c * f k) = c * sum n f.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_opp : forall n f, sum n (fun k => - f k) = - sum n f.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_zero : forall n f, (forall k, (k < n)%nat -> f k = 0) -> sum n f = 0.
Proof.
  intros n f H. rewrite (sum_ext n f (fun _ => 0)) by assumption.
  clear H. induction n; simpl; [reflexivity|]. rewrite IHn. lra.
Qed.

Lemma sum_const : forall n c f, (forall k, (k < n)%nat -> f k = c) -> sum n f = INR n * c.
Proof.
  intros n c f H. rewrite (sum_ext n f (fun _ => c)) by assumption.
  clear H. induction n; simpl sum; [simpl; lra|]. rewrite IHn, S_INR. lra.
Qed.

Lemma sum_le : forall n f g, (forall k, (k < n)%nat -> f k <= g k) -> sum n f <= sum n g.
Proof.
  induction n as [|n IH]; intros f g H; simpl; [lra|].
  assert (sum n f <= sum n g) by (apply IH; intros; apply H; lia).
  assert (f n <= g n) by (apply H; lia). lra.
Qed.

Lemma sum_nonneg : forall n f, (forall k, (k < n)%nat -> 0 <= f k) -> 0 <= sum n f.
Proof.
  intros n f H. replace 0 with (sum n (fun _ => 0)) by (rewrite sum_zero; auto).
  apply sum_le. assumption.
Qed.

(** Splitting off the first term: sum over k < n+1 = f 0 + sum over k < n of f (k+1). *)
Lemma sum_first : forall n f, sum (S n) f = f O + sum n (fun k => f (S k)).
Proof.
  induction n as [|n IH]; intros f.
  - simpl. lra.
  - change (sum (S (S n)) f) with (sum (S n) f + f (S n)). rewrite IH. simpl. lra.
Qed.

(** Exchanging two finite sums. *)
Lemma sum_swap : forall n m (f : nat -> nat -> R),
  sum n (fun i => sum m (fun j => f i j)) = sum m (fun j => sum n (fun i => f i j)).
Proof.
  induction n as [|n IH]; intros m f; simpl.
  - rewrite sum_zero; auto.
  - rewrite IH, <- sum_plus. reflexivity.
Qed.

(** A sum with a single non-zero term. *)
Lemma sum_single : forall n p f, (p < n)%nat -> (forall k, (k < n)%nat -> k <> p -> f k = 0) ->
  sum n f = f p.
Proof.
  induction n as [|n IH]; intros p f Hp H; [lia|]. simpl.
  destruct (Nat.eq_dec p n) as [->|Hne].
  - rewrite sum_zero; [lra|]. intros k Hk. apply H; lia.
  - rewrite (IH p f) by (try lia; intros; apply H; lia). rewrite (H n) by lia. lra.
Qed.

Lemma sum_abs : forall n f, Rabs (sum n f) <= sum n (fun k => Rabs (f k)).
Proof.
  induction n as [|n IH]; intros f; simpl.
  - rewrite Rabs_R0. lra.
  - eapply Rle_trans; [apply Rabs_triang|]. specialize (IH f). lra.
Qed.
