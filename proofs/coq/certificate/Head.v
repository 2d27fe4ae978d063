(* A single softmax head's minimum BOS mass over every input: the statement (Head.v).

   This file states the head's real semantics (SPEC sections 1-2): tokens, the input class, the
   bilinear score x^T M y of a rational score form M = W_Q^T W_K, and the softmax BOS weight of
   a query.  [min_bos_mass_at_least d L M q] says: on EVERY sequence of length L (any trigger
   position j in 2..L-1, any contents in [-1, 1]), at EVERY non-trigger query i in 1..L-1, the
   BOS weight is >= q.

   Checker.v is a checker over rationals: a bisection tree covering the query's content box; at
   each leaf outward interval bounds (exact rationals) on the score gaps of the three kinds of
   key (content, trigger, the query itself), exp bounded above through tables of exp facts, and
   the sum (L-3) e^uC + e^uT + e^uS <= Rc.  Sound.v, Certified.v and Main.v prove it sound once
   ([Main.certificate_sound]): if it returns true and the tables' facts hold, then
   [min_bos_mass_at_least d L (form N D) q] for q (1 + Rc) <= 1, M = N / D.  A certificate file
   (written by export.py) supplies N, D, the tables (each fact proved with the interval tactic)
   and the tree, and runs the checker with vm_compute. *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.

Open Scope R_scope.

Fixpoint sumR (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S m => sumR m f + f m end.

(* M[a][b]: the score form's entry for query feature a, key feature b. *)
Definition entry (M : list (list Q)) (a b : nat) : R := Q2R (nth b (nth a M []) 0%Q).

(* s(x, y) = x^T M y. *)
Definition score (d : nat) (M : list (list Q)) (x y : nat -> R) : R :=
  sumR d (fun b => sumR d (fun a => x a * entry M a b) * y b).

(* Features: 0 BOS flag, 1 trigger flag, 2..d-2 content, d-1 content flag (SPEC section 1). *)
Definition is_content (d a : nat) : bool := (2 <=? a)%nat && (a <=? d - 2)%nat.

Definition bos_token (a : nat) : R := if (a =? 0)%nat then 1 else 0.
Definition content_token (d : nat) (c : nat -> R) (a : nat) : R :=
  if (a =? d - 1)%nat then 1 else if is_content d a then c a else 0.
Definition trigger_token (d : nat) (c : nat -> R) (a : nat) : R :=
  if (a =? 1)%nat then 1 else if is_content d a then c a else 0.

(* Position k of the sequence with trigger j and contents C k (C k a: feature a's content). *)
Definition sequence (d j : nat) (C : nat -> nat -> R) (k : nat) : nat -> R :=
  if (k =? 0)%nat then bos_token
  else if (k =? j)%nat then trigger_token d (C k) else content_token d (C k).

(* Softmax over the causal keys 0..i: the BOS weight a_i0. *)
Definition bos_weight (d : nat) (M : list (list Q)) (X : nat -> nat -> R) (i : nat) : R :=
  exp (score d M (X i) (X 0%nat)) / sumR (S i) (fun k => exp (score d M (X i) (X k))).

Definition in_content_box (d : nat) (c : nat -> R) : Prop :=
  forall a, is_content d a = true -> -1 <= c a <= 1.

Definition min_bos_mass_at_least (d L : nat) (M : list (list Q)) (q : Q) : Prop :=
  forall (j : nat) (C : nat -> nat -> R),
    (2 <= j <= L - 1)%nat ->
    (forall k, (1 <= k <= L - 1)%nat -> in_content_box d (C k)) ->
    forall i, (1 <= i <= L - 1)%nat -> i <> j ->
    Q2R q <= bos_weight d M (sequence d j C) i.


(* At the trigger query j itself: the BOS weight is at most p on every input. *)
Definition max_bos_mass_at_trigger_at_most (d L : nat) (M : list (list Q)) (p : Q) : Prop :=
  forall (j : nat) (C : nat -> nat -> R),
    (2 <= j <= L - 1)%nat ->
    (forall k, (1 <= k <= L - 1)%nat -> in_content_box d (C k)) ->
    bos_weight d M (sequence d j C) j <= Q2R p.
