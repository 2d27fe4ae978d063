(** The task of SPEC section 1 for every d >= 4 and L >= 4 (constructions/task.py).

    Coordinates: 0 the BOS flag, 1 the trigger flag, 2 .. d-2 the content, d-1 the content flag.
    Position 0 is BOS, the trigger sits at j in 2 .. L-1, every other position 1 .. L-1 is a
    content token; a content is a function q |-> c q read at q = 0 .. d-4 (feature 2 + q). *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear.
Open Scope R_scope.

Definition content := nat -> R.

Definition bos_flag : nat := 0.
Definition trigger_flag : nat := 1.
Definition content_flag (d : nat) : nat := (d - 1)%nat.

Definition is_content_coordinate (d r : nat) : bool := (2 <=? r)%nat && (r <? d - 1)%nat.

Definition bos (d : nat) : vec := fun r => if Nat.eqb r 0 then 1 else 0.

Definition content_token (d : nat) (c : content) : vec := fun r =>
  if Nat.eqb r (d - 1) then 1 else if is_content_coordinate d r then c (r - 2)%nat else 0.

Definition trigger_token (d : nat) (c : content) : vec := fun r =>
  if Nat.eqb r 1 then 1 else if is_content_coordinate d r then c (r - 2)%nat else 0.

(** The sequence with the trigger at j and content cs p at position p (BOS carries none). *)
Definition sequence (d j : nat) (cs : nat -> content) : nat -> vec := fun p =>
  if Nat.eqb p 0 then bos d else if Nat.eqb p j then trigger_token d (cs p) else content_token d (cs p).

(** The equal-content sequence S_j(c): every content token and the trigger carry c. *)
Definition equal_content (d j : nat) (c : content) : nat -> vec := sequence d j (fun _ => c).

(** The closed box [-1, 1]^(d-3), for one content and for the contents of positions 1 .. L-1. *)
Definition content_in_box (d : nat) (c : content) : Prop := forall q, (q < d - 3)%nat -> -1 <= c q <= 1.
Definition in_box (d L : nat) (cs : nat -> content) : Prop :=
  forall p, (1 <= p < L)%nat -> content_in_box d (cs p).

Definition valid_trigger (L j : nat) : Prop := (2 <= j <= L - 1)%nat.

(** Single-layer target: the mean of positions 1 .. j at the trigger, 0 elsewhere. *)
Definition target (j : nat) (X : nat -> vec) (i : nat) : vec := fun r =>
  if Nat.eqb i j then / INR j * sum j (fun k => X (S k) r) else 0.

(** Residual target: x_i, plus the mean at the trigger. *)
Definition residual_target (j : nat) (X : nat -> vec) (i : nat) : vec := fun r => X i r + target j X i r.

(** A model maps a sequence to its outputs at every position. *)
Definition model := (nat -> vec) -> nat -> vec.

(** "Worst-case max-abs error <= eta" over every input of the task: every trigger position j,
    every content in the closed box, every query i < L and every coordinate r < d. *)
Definition error_le (d L : nat) (f : model) (y : nat -> (nat -> vec) -> nat -> vec) (eta : R) : Prop :=
  forall j cs i r, valid_trigger L j -> in_box d L cs -> (i < L)%nat -> (r < d)%nat ->
    Rabs (f (sequence d j cs) i r - y j (sequence d j cs) i r) <= eta.

Definition worst_error_le (d L : nat) (f : model) (eta : R) : Prop := error_le d L f target eta.
Definition worst_residual_error_le (d L : nat) (f : model) (eta : R) : Prop :=
  error_le d L f residual_target eta.

(** ** The flags of the three token types (d >= 4). *)
Section Flags.
Variable d : nat.
Hypothesis Hd : (4 <= d)%nat.

Lemma bos_trigger_flag : bos d trigger_flag = 0.
Proof. reflexivity. Qed.
Lemma bos_content_flag : bos d (content_flag d) = 0.
Proof. unfold bos, content_flag. destruct (Nat.eqb_spec (d - 1) 0); [lia | reflexivity]. Qed.
Lemma content_trigger_flag : forall c, content_token d c trigger_flag = 0.
Proof.
  intros. unfold content_token, is_content_coordinate, trigger_flag.
  destruct (Nat.eqb_spec 1 (d - 1)); [lia|]. reflexivity.
Qed.
Lemma content_content_flag : forall c, content_token d c (content_flag d) = 1.
Proof. intros. unfold content_token, content_flag. rewrite Nat.eqb_refl. reflexivity. Qed.
Lemma trigger_trigger_flag : forall c, trigger_token d c trigger_flag = 1.
Proof. reflexivity. Qed.
Lemma trigger_content_flag : forall c, trigger_token d c (content_flag d) = 0.
Proof.
  intros. unfold trigger_token, is_content_coordinate, content_flag.
  destruct (Nat.eqb_spec (d - 1) 1); [lia|].
  replace (d - 1 <? d - 1)%nat with false by (symmetry; apply Nat.ltb_ge; lia).
  rewrite Bool.andb_false_r. reflexivity.
Qed.

(** Every feature of a task token with content in the box lies in [-1, 1]. *)
Lemma content_token_bounded : forall c r, content_in_box d c -> Rabs (content_token d c r) <= 1.
Proof.
  intros c r Hc. unfold content_token, is_content_coordinate.
  destruct (Nat.eqb r (d - 1)); [rewrite Rabs_R1; lra|].
  destruct (2 <=? r)%nat eqn:E1; destruct (r <? d - 1)%nat eqn:E2; simpl;
    try (rewrite Rabs_R0; lra).
  apply Nat.leb_le in E1. apply Nat.ltb_lt in E2.
  apply Rabs_le. apply Hc. lia.
Qed.
Lemma trigger_token_bounded : forall c r, content_in_box d c -> Rabs (trigger_token d c r) <= 1.
Proof.
  intros c r Hc. unfold trigger_token, is_content_coordinate.
  destruct (Nat.eqb r 1); [rewrite Rabs_R1; lra|].
  destruct (2 <=? r)%nat eqn:E1; destruct (r <? d - 1)%nat eqn:E2; simpl;
    try (rewrite Rabs_R0; lra).
  apply Nat.leb_le in E1. apply Nat.ltb_lt in E2.
  apply Rabs_le. apply Hc. lia.
Qed.
Lemma bos_bounded : forall r, Rabs (bos d r) <= 1.
Proof. intros. unfold bos. destruct (Nat.eqb r 0); [rewrite Rabs_R1 | rewrite Rabs_R0]; lra. Qed.
End Flags.

(** ** Where the token types sit in a sequence. *)
Lemma sequence_bos : forall d j cs, sequence d j cs 0 = bos d.
Proof. reflexivity. Qed.
Lemma sequence_trigger : forall d j cs, (1 <= j)%nat -> sequence d j cs j = trigger_token d (cs j).
Proof.
  intros. unfold sequence. destruct (Nat.eqb_spec j 0); [lia|]. rewrite Nat.eqb_refl. reflexivity.
Qed.
Lemma sequence_content : forall d j cs k, (1 <= k)%nat -> k <> j -> sequence d j cs k = content_token d (cs k).
Proof.
  intros. unfold sequence. destruct (Nat.eqb_spec k 0); [lia|].
  destruct (Nat.eqb_spec k j); [lia|]. reflexivity.
Qed.

(** Only BOS carries the BOS flag. *)
Lemma sequence_bos_flag : forall d j cs k, (4 <= d)%nat -> (1 <= k)%nat -> sequence d j cs k bos_flag = 0.
Proof.
  intros d j cs k Hd Hk. unfold sequence, bos_flag. destruct (Nat.eqb_spec k 0); [lia|].
  destruct (Nat.eqb k j).
  - reflexivity.
  - unfold content_token, is_content_coordinate. destruct (Nat.eqb_spec 0 (d - 1)); [lia | reflexivity].
Qed.

Lemma sequence_bounded : forall d L j cs k r, (4 <= d)%nat -> in_box d L cs -> (k < L)%nat ->
  Rabs (sequence d j cs k r) <= 1.
Proof.
  intros d L j cs k r Hd Hb Hk. unfold sequence.
  destruct (Nat.eqb_spec k 0); [apply bos_bounded|].
  destruct (Nat.eqb k j); [apply trigger_token_bounded | apply content_token_bounded];
    auto; apply Hb; lia.
Qed.

(** Positions 1 .. j of S_j(c): j - 1 content tokens, then the trigger. *)
Lemma equal_content_prefix : forall d j c r, (1 <= j)%nat ->
  sum j (fun k => equal_content d j c (S k) r) = INR (j - 1) * content_token d c r + trigger_token d c r.
Proof.
  intros d j c r Hj. destruct j as [|j]; [lia|].
  simpl sum. replace (S j - 1)%nat with j by lia.
  rewrite (sum_const j (content_token d c r)).
  - unfold equal_content. rewrite sequence_trigger by lia. reflexivity.
  - intros k Hk. unfold equal_content. rewrite sequence_content by lia. reflexivity.
Qed.

Lemma target_off_trigger : forall j X i r, i <> j -> target j X i r = 0.
Proof. intros. unfold target. destruct (Nat.eqb_spec i j); [lia | reflexivity]. Qed.

Lemma target_equal_content_trigger : forall d j c r, (1 <= j)%nat ->
  target j (equal_content d j c) j r = / INR j * (INR (j - 1) * content_token d c r + trigger_token d c r).
Proof.
  intros. unfold target. rewrite Nat.eqb_refl, equal_content_prefix by assumption. reflexivity.
Qed.

Lemma equal_content_in_box : forall d L c, content_in_box d c -> in_box d L (fun _ => c).
Proof. intros d L c Hc p _. exact Hc. Qed.

Lemma zero_content_in_box : forall d, content_in_box d (fun _ => 0).
Proof. intros d q _. lra. Qed.
