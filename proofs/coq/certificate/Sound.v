(* The checker of Checker.v is sound for the semantics of Head.v: [certificate_sound]. *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head Checker.

Open Scope R_scope.

(* ---------- rationals to reals ---------- *)

Lemma Q2R_red q : Q2R (Qred q) = Q2R q.
Proof. apply Qeq_eqR, Qred_correct. Qed.

Lemma Qle_bool_R x y : Qle_bool x y = true -> Q2R x <= Q2R y.
Proof. intro H; apply Qle_Rle, Qle_bool_iff, H. Qed.

Lemma Qle_bool_false_R x y : Qle_bool x y = false -> Q2R y < Q2R x.
Proof.
  intro H; apply Qlt_Rlt, Qnot_le_lt; intro E; apply Qle_bool_iff in E; congruence.
Qed.

Lemma Q2R_0 : Q2R 0 = 0.
Proof. unfold Q2R; simpl; lra. Qed.

Lemma Q2R_int z : Q2R (inject_Z z) = IZR z.
Proof. unfold Q2R; simpl; lra. Qed.

Lemma Q2R_pair z p : Q2R (Qmake z p) = IZR z / IZR (Z.pos p).
Proof. reflexivity. Qed.

Ltac qnum := unfold Q2R; simpl; lra.

(* ---------- finite sums ---------- *)

Lemma sumR_ext n f g : (forall k, (k < n)%nat -> f k = g k) -> sumR n f = sumR n g.
Proof.
  induction n; intro H; simpl; [reflexivity|].
  rewrite IHn by (intros; apply H; lia). rewrite H by lia. reflexivity.
Qed.

Lemma sumR_le n f g : (forall k, (k < n)%nat -> f k <= g k) -> sumR n f <= sumR n g.
Proof.
  induction n; intro H; simpl; [lra|].
  assert (sumR n f <= sumR n g) by (apply IHn; intros; apply H; lia).
  assert (f n <= g n) by (apply H; lia). lra.
Qed.

Lemma sumR_minus n f g : sumR n f - sumR n g = sumR n (fun k => f k - g k).
Proof. induction n; simpl; [lra|]. rewrite <- IHn. lra. Qed.

Lemma sumR_scale n f c : c * sumR n f = sumR n (fun k => c * f k).
Proof. induction n; simpl; [lra|]. rewrite <- IHn. lra. Qed.

Lemma sumR_nonneg n f : (forall k, (k < n)%nat -> 0 <= f k) -> 0 <= sumR n f.
Proof.
  intro H; apply Rle_trans with (sumR n (fun _ => 0)).
  - clear H; induction n; simpl; lra.
  - apply sumR_le; auto.
Qed.

Lemma sumR_shift n f : sumR (S n) f = f 0%nat + sumR n (fun k => f (S k)).
Proof. induction n; simpl in *; [lra|]. rewrite IHn. lra. Qed.

Lemma sumQ_sound n f : Q2R (sumQ n f) = sumR n (fun k => Q2R (f k)).
Proof. induction n; cbn [sumQ sumR]; [apply Q2R_0|]. rewrite Q2R_red, Q2R_plus, IHn. reflexivity. Qed.

(* ---------- interval pieces ---------- *)

Definition within (x : iv) (v : R) : Prop := Q2R (fst x) <= v <= Q2R (snd x).

Lemma scale_sound m x v : within x v -> within (scale m x) (v * Q2R m).
Proof.
  unfold within, scale; intros [H1 H2].
  destruct (Qle_bool 0 m) eqn:E; cbn [fst snd]; rewrite !Q2R_red, !Q2R_mult.
  - apply Qle_bool_R in E; rewrite Q2R_0 in E; split; nra.
  - apply Qle_bool_false_R in E; rewrite Q2R_0 in E; split; nra.
Qed.

Lemma sum_iv_sound n f h : (forall a, (a < n)%nat -> within (f a) (h a)) -> within (sum_iv n f) (sumR n h).
Proof.
  unfold within; induction n; intro H; cbn [sum_iv fst snd sumR]; [rewrite Q2R_0; lra|].
  unfold add_iv; cbn [fst snd]; rewrite !Q2R_red, !Q2R_plus.
  destruct IHn as [A B]; [intros; apply H; lia|].
  destruct (H n) as [C D]; [lia|]. lra.
Qed.

Lemma corner_le a b c e g y : a <= g <= b -> c <= y <= e ->
  g * y <= a * c \/ g * y <= a * e \/ g * y <= b * c \/ g * y <= b * e.
Proof.
  intros [Ha Hb] [Hc He]. destruct (Rle_dec 0 y).
  - destruct (Rle_dec 0 b); [right; right; right; nra | right; right; left; nra].
  - destruct (Rle_dec 0 a); [right; left; nra | left; nra].
Qed.

Lemma max_ge_l x y : Q2R x <= Q2R (Qmax x y).
Proof. apply Qle_Rle, Q.le_max_l. Qed.
Lemma max_ge_r x y : Q2R y <= Q2R (Qmax x y).
Proof. apply Qle_Rle, Q.le_max_r. Qed.

Lemma mul_hi_sound x y g v : within x g -> within y v -> g * v <= Q2R (mul_hi x y).
Proof.
  unfold within, mul_hi; intros Hx Hy; rewrite Q2R_red.
  pose proof (max_ge_l (Qmax (fst x * fst y) (fst x * snd y)) (Qmax (snd x * fst y) (snd x * snd y))).
  pose proof (max_ge_r (Qmax (fst x * fst y) (fst x * snd y)) (Qmax (snd x * fst y) (snd x * snd y))).
  pose proof (max_ge_l (fst x * fst y) (fst x * snd y)). pose proof (max_ge_r (fst x * fst y) (fst x * snd y)).
  pose proof (max_ge_l (snd x * fst y) (snd x * snd y)). pose proof (max_ge_r (snd x * fst y) (snd x * snd y)).
  rewrite !Q2R_mult in *.
  destruct (corner_le _ _ _ _ _ _ Hx Hy) as [?|[?|[?|?]]]; lra.
Qed.

(* ---------- boxes ---------- *)

Definition in_qbox (box : list iv) (c : nat -> R) : Prop :=
  forall a, (a < length box)%nat -> within (nth a box (0, 0)%Q) (c (a + 2)%nat).

Lemma is_content_true d a : is_content d a = true -> (2 <= a <= d - 2)%nat.
Proof. unfold is_content; intro H; apply andb_true_iff in H as [H1 H2]; apply Nat.leb_le in H1, H2; lia. Qed.

Lemma is_content_intro d a : (2 <= a <= d - 2)%nat -> is_content d a = true.
Proof. intro H; unfold is_content; apply andb_true_iff; split; apply Nat.leb_le; lia. Qed.

Lemma nth_upd l : forall k v a, nth a (upd l k v) (0, 0)%Q =
  if ((a =? k)%nat && (a <? length l)%nat)%bool then v else nth a l (0, 0)%Q.
Proof.
  induction l as [|x t IH]; intros k v a.
  - simpl; rewrite andb_false_r; destruct a; reflexivity.
  - destruct k, a; simpl; try reflexivity. apply IH.
Qed.

Lemma upd_length l : forall k v, length (upd l k v) = length l.
Proof. induction l; intros [|k] v; simpl; auto. Qed.

Lemma split_sound box k c :
  in_qbox box c ->
  (c (k + 2)%nat <= Q2R (mid box k) -> in_qbox (split_lo box k) c) /\
  (Q2R (mid box k) <= c (k + 2)%nat -> in_qbox (split_hi box k) c).
Proof.
  intros H; split; intros Hm a Ha; unfold split_lo, split_hi in *; rewrite upd_length in Ha;
    rewrite nth_upd; destruct ((a =? k)%nat && (a <? length box)%nat)%bool eqn:E; auto;
    apply andb_true_iff in E as [E _]; apply Nat.eqb_eq in E; subst a;
    destruct (H k Ha); unfold within; simpl; lra.
Qed.

Lemma check_tree_sound (ok : list iv -> bool) (P : (nat -> R) -> Prop) n :
  (forall box c, length box = n -> ok box = true -> in_qbox box c -> P c) ->
  forall t box c, length box = n -> check_tree ok box t = true -> in_qbox box c -> P c.
Proof.
  intros Hok t; induction t as [|k l IHl r IHr]; intros box c Hn Ht Hc; simpl in Ht; [eauto|].
  apply andb_true_iff in Ht as [Hl Hr].
  destruct (split_sound box k c Hc) as [Hlo Hhi].
  destruct (Rle_dec (c (k + 2)%nat) (Q2R (mid box k))).
  - apply (IHl (split_lo box k)); auto. unfold split_lo; rewrite upd_length; auto.
  - apply (IHr (split_hi box k)); [unfold split_hi; rewrite upd_length; auto|auto|apply Hhi; lra].
Qed.

Lemma nth_repeat_lt (x : iv) m a : (a < m)%nat -> nth a (repeat x m) (0, 0)%Q = x.
Proof. revert a; induction m; intros [|a] H; simpl; try lia; auto. apply IHm; lia. Qed.

Lemma root_sound d c : in_content_box d c -> in_qbox (root (d - 3)) c.
Proof.
  intros H a Ha; unfold root in *; rewrite repeat_length in Ha; rewrite nth_repeat_lt by lia.
  unfold within; simpl. destruct (H (a + 2)%nat) as [H1 H2]; [apply is_content_intro; lia|].
  split; [unfold Q2R; simpl; lra | unfold Q2R; simpl; lra].
Qed.
