(* The trigger query's maximum BOS weight: lower bounds on its keys' score gaps and on exp. *)

From Coq Require Import Reals QArith Qreals Qround Qminmax List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head Checker.

Open Scope Q_scope.

Definition mul_lo (x y : iv) : Q :=
  Qred (Qmin (Qmin (fst x * fst y) (fst x * snd y)) (Qmin (snd x * fst y) (snd x * snd y))).

(* The trigger token over a box of its contents. *)
Definition trigger_iv (d : nat) (box : list iv) (a : nat) : iv :=
  if (a =? 1)%nat then (1, 1) else if is_content d a then nth (a - 2) box (0, 0) else (0, 0).

Definition gt_iv (d : nat) (N : list (list Z)) (box : list iv) (b : nat) : iv :=
  sum_iv d (fun a => scale (Mq N a b) (trigger_iv d box a)).

Definition trigger_self_key (d : nat) (box : list iv) (b : nat) : iv :=
  if (b =? 0)%nat then (-1, -1) else trigger_iv d box b.

Definition gap_lo (d : nat) (D : positive) (G : list iv) (y : nat -> iv) : Q :=
  Qred (sumQ d (fun b => mul_lo (nth b G (0, 0)) (y b)) * Qmake 1 D).

(* exp(u) = exp(a) exp(b/32) exp(c/1024) exp(x) >= e1 e2 e3 (1 + x), 0 <= x, each e >= 0. *)
Definition exp_down (T : tables) (u : Q) : option Q :=
  let a := Qfloor u in
  let r1 := Qred (u - inject_Z a) in
  let b := Qfloor (r1 * 32) in
  let r2 := Qred (r1 - Qmake b 32) in
  let c := Qfloor (r2 * 1024) in
  let x := Qred (r2 - Qmake c 1024) in
  match lookup (units T) a, lookup (thirty_seconds T) b, lookup (kilo T) c with
  | Some e1, Some e2, Some e3 =>
      if Qle_bool 0 x && Qle_bool 0 e1 && Qle_bool 0 e2 && Qle_bool 0 e3
      then Some (Qred (e1 * e2 * e3 * (1 + x))) else None
  | _, _, _ => None
  end.

(* A trigger query sees at least one content key (j >= 2) and itself. *)
Definition trigger_leaf_ok (d : nat) (N : list (list Z)) (D : positive) (T : tables) (p : Q) (box : list iv)
  : bool :=
  let G := map (gt_iv d N box) (seq 0 d) in
  match exp_down T (gap_lo d D G (content_key d)), exp_down T (gap_lo d D G (trigger_self_key d box)) with
  | Some eC, Some eS => Qle_bool 1 (p * (1 + eC + eS))
  | _, _ => false
  end.

Definition trigger_certificate_ok (d L : nat) (N : list (list Z)) (D : positive) (T : tables) (p : Q) (t : tree)
  : bool :=
  (4 <=? d)%nat && (4 <=? L)%nat && check_tree (trigger_leaf_ok d N D T p) (root (d - 3)) t.

Definition table_lo_ok (s : Z) (t : table) : Prop :=
  Forall (fun p => (Q2R (snd p) <= exp (IZR (fst p) / IZR s))%R) t.

Definition tables_lo_ok (T : tables) : Prop :=
  table_lo_ok 1 (units T) /\ table_lo_ok 32 (thirty_seconds T) /\ table_lo_ok 1024 (kilo T).
