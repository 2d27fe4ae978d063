(** Vectors and matrices of dimension d as functions on indices, and the linearity the proofs use. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums.
Open Scope R_scope.

Definition vec := nat -> R.
Definition mat := nat -> nat -> R.

(** (M x)_r = sum_{c < d} M_rc x_c. *)
Definition matvec (d : nat) (M : mat) (x : vec) : vec := fun r => sum d (fun c => M r c * x c).

Definition dot (d : nat) (u v : vec) : R := sum d (fun r => u r * v r).

(** The combination sum_{k < n} a_k x_k of the vectors x_0 .. x_{n-1}. *)
Definition combine (n : nat) (a : nat -> R) (x : nat -> vec) : vec := fun r => sum n (fun k => a k * x k r).

Definition zero_mat : mat := fun _ _ => 0.
Definition id_mat : mat := fun r c => if Nat.eqb r c then 1 else 0.

(** E[r0, c0], the matrix with a single 1 in row r0, column c0. *)
Definition unit_mat (r0 c0 : nat) : mat := fun r c => if andb (Nat.eqb r r0) (Nat.eqb c c0) then 1 else 0.

Lemma matvec_unit : forall d r0 c0 x r, (c0 < d)%nat ->
  matvec d (unit_mat r0 c0) x r = if Nat.eqb r r0 then x c0 else 0.
Proof.
  intros d r0 c0 x r Hc. unfold matvec, unit_mat. destruct (Nat.eqb r r0); simpl.
  - rewrite (sum_single d c0); [rewrite Nat.eqb_refl; ring | assumption |].
    intros k _ Hk. destruct (Nat.eqb_spec k c0); [lia | ring].
  - apply sum_zero. intros. ring.
Qed.

(** A matrix maps a combination to the combination of the images. *)
Lemma matvec_combine : forall d M n a x r,
  matvec d M (combine n a x) r = sum n (fun k => a k * matvec d M (x k) r).
Proof.
  intros. unfold matvec, combine.
  rewrite (sum_ext d _ (fun c => sum n (fun k => M r c * (a k * x k c))))
    by (intros; rewrite <- sum_scale; reflexivity).
  rewrite sum_swap. apply sum_ext. intros k _.
  rewrite <- sum_scale. apply sum_ext. intros. lra.
Qed.

Lemma matvec_zero : forall d x r, matvec d zero_mat x r = 0.
Proof. intros. unfold matvec, zero_mat. apply sum_zero. intros. lra. Qed.

Lemma matvec_id : forall d x r, (r < d)%nat -> matvec d id_mat x r = x r.
Proof.
  intros d x r Hr. unfold matvec, id_mat.
  rewrite (sum_single d r).
  - rewrite Nat.eqb_refl. lra.
  - assumption.
  - intros k _ Hk. destruct (Nat.eqb_spec r k); [lia | lra].
Qed.

Lemma matvec_opp : forall d M x r, matvec d (fun a b => - M a b) x r = - matvec d M x r.
Proof.
  intros. unfold matvec. rewrite <- sum_opp. apply sum_ext. intros. lra.
Qed.
