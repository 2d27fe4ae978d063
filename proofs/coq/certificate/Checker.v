(* The certificate checker: rationals only (see Head.v for what it certifies, Sound.v for why). *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head.

Open Scope Q_scope.

Definition iv : Type := (Q * Q)%type.

Definition scale (m : Q) (x : iv) : iv :=
  if Qle_bool 0 m then (Qred (m * fst x), Qred (m * snd x)) else (Qred (m * snd x), Qred (m * fst x)).

Definition add_iv (x y : iv) : iv := (Qred (fst x + fst y), Qred (snd x + snd y)).

Fixpoint sum_iv (n : nat) (f : nat -> iv) : iv :=
  match n with O => (0, 0) | S m => add_iv (sum_iv m f) (f m) end.

Fixpoint sumQ (n : nat) (f : nat -> Q) : Q :=
  match n with O => 0 | S m => Qred (sumQ m f + f m) end.

Definition mul_hi (x y : iv) : Q :=
  Qred (Qmax (Qmax (fst x * fst y) (fst x * snd y)) (Qmax (snd x * fst y) (snd x * snd y))).

(* The head's score form is given as integers over one denominator, M = N / D (form N D): the
   checker works with the integers N, whose sums stay small, and divides the gaps by D once. *)
Definition form (N : list (list Z)) (D : positive) : list (list Q) := map (map (fun n => Qmake n D)) N.

Definition Mq (N : list (list Z)) (a b : nat) : Q := inject_Z (nth b (nth a N []) 0%Z).

(* The query token (a content token) over a box of its contents: box[a - 2] on feature a. *)
Definition query_iv (d : nat) (box : list iv) (a : nat) : iv :=
  if (a =? d - 1)%nat then (1, 1) else if is_content d a then nth (a - 2) box (0, 0) else (0, 0).

(* g_b = sum_a x_a N[a][b] over the box: D times the query's score functional. *)
Definition g_iv (d : nat) (N : list (list Z)) (box : list iv) (b : nat) : iv :=
  sum_iv d (fun a => scale (Mq N a b) (query_iv d box a)).

(* y_b - bos_b for each kind of key. *)
Definition content_key (d b : nat) : iv :=
  if (b =? 0)%nat then (-1, -1) else if (b =? d - 1)%nat then (1, 1)
  else if is_content d b then (-1, 1) else (0, 0).
Definition trigger_key (d b : nat) : iv :=
  if (b =? 0)%nat then (-1, -1) else if (b =? 1)%nat then (1, 1)
  else if is_content d b then (-1, 1) else (0, 0).
Definition self_key (d : nat) (box : list iv) (b : nat) : iv :=
  if (b =? 0)%nat then (-1, -1) else query_iv d box b.

Definition gap_up (d : nat) (D : positive) (G : list iv) (y : nat -> iv) : Q :=
  Qred (sumQ d (fun b => mul_hi (nth b G (0, 0)) (y b)) * Qmake 1 D).

(* Tables of exp facts: (z, e) with exp(z / s) <= e. *)
Definition table : Type := list (Z * Q).
Definition lookup (t : table) (z : Z) : option Q :=
  match find (fun p => Z.eqb (fst p) z) t with Some p => Some (snd p) | None => None end.

Record tables : Type := { units : table; thirty_seconds : table; kilo : table }.

(* exp(u) = exp(a) exp(b/32) exp(c/1024) exp(x) <= e1 e2 e3 / (1 - x), 0 <= x < 1. *)
Definition exp_up (T : tables) (u : Q) : option Q :=
  let a := Qfloor u in
  let r1 := Qred (u - inject_Z a) in
  let b := Qfloor (r1 * 32) in
  let r2 := Qred (r1 - Qmake b 32) in
  let c := Qfloor (r2 * 1024) in
  let x := Qred (r2 - Qmake c 1024) in
  match lookup (units T) a, lookup (thirty_seconds T) b, lookup (kilo T) c with
  | Some e1, Some e2, Some e3 =>
      if Qle_bool 0 x && negb (Qle_bool 1 x) then Some (Qred (e1 * e2 * e3 / (1 - x))) else None
  | _, _, _ => None
  end.

Definition leaf_ok (d L : nat) (N : list (list Z)) (D : positive) (T : tables) (Rc : Q) (box : list iv)
  : bool :=
  let G := map (g_iv d N box) (seq 0 d) in
  match exp_up T (gap_up d D G (content_key d)), exp_up T (gap_up d D G (trigger_key d)),
        exp_up T (gap_up d D G (self_key d box)) with
  | Some eC, Some eT, Some eS => Qle_bool (inject_Z (Z.of_nat (L - 3)) * eC + eT + eS) Rc
  | _, _, _ => false
  end.

Inductive tree : Type := Leaf | Node (k : nat) (left right : tree).

Fixpoint upd (l : list iv) (k : nat) (v : iv) : list iv :=
  match l, k with
  | [], _ => []
  | _ :: t, O => v :: t
  | x :: t, S k' => x :: upd t k' v
  end.

Definition mid (box : list iv) (k : nat) : Q :=
  Qred ((fst (nth k box (0, 0)) + snd (nth k box (0, 0))) * (1 # 2)).
Definition split_lo (box : list iv) (k : nat) : list iv := upd box k (fst (nth k box (0, 0)), mid box k).
Definition split_hi (box : list iv) (k : nat) : list iv := upd box k (mid box k, snd (nth k box (0, 0))).

Fixpoint check_tree (ok : list iv -> bool) (box : list iv) (t : tree) : bool :=
  match t with
  | Leaf => ok box
  | Node k l r => check_tree ok (split_lo box k) l && check_tree ok (split_hi box k) r
  end.

Definition root (n : nat) : list iv := repeat (-1, 1) n.

Definition certificate_ok (d L : nat) (N : list (list Z)) (D : positive) (T : tables) (Rc q : Q) (t : tree)
  : bool :=
  (4 <=? d)%nat && (4 <=? L)%nat && Qle_bool 0 q && Qle_bool (q * (1 + Rc)) 1
  && check_tree (leaf_ok d L N D T Rc) (root (d - 3)) t.

Definition table_ok (s : Z) (t : table) : Prop :=
  Forall (fun p => (exp (IZR (fst p) / IZR s) <= Q2R (snd p))%R) t.

Definition tables_ok (T : tables) : Prop :=
  table_ok 1 (units T) /\ table_ok 32 (thirty_seconds T) /\ table_ok 1024 (kilo T).
