(* certificate_sound: a checked certificate proves min_bos_mass_at_least (Head.v). *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head Checker Sound.

Open Scope R_scope.

(* ---------- the score gaps, feature by feature ---------- *)

Definition functional (d : nat) (M : list (list Q)) (x : nat -> R) (b : nat) : R :=
  sumR d (fun a => x a * entry M a b).

Lemma gap_form d M x y :
  score d M x y - score d M x bos_token = sumR d (fun b => functional d M x b * (y b - bos_token b)).
Proof. unfold score; rewrite sumR_minus; apply sumR_ext; intros; unfold functional; ring. Qed.

Lemma query_iv_sound d box c a : (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (a < d)%nat -> within (query_iv d box a) (content_token d c a).
Proof.
  intros Hd Hl Hc Ha; unfold query_iv, content_token, within.
  destruct (a =? d - 1)%nat; [cbn [fst snd]; unfold Q2R; simpl; lra|].
  destruct (is_content d a) eqn:E; [|cbn [fst snd]; rewrite Q2R_0; lra].
  apply is_content_true in E. pose proof (Hc (a - 2)%nat ltac:(lia)) as H.
  replace (a - 2 + 2)%nat with a in H by lia. exact H.
Qed.

Definition functional_int (d : nat) (N : list (list Z)) (x : nat -> R) (b : nat) : R :=
  sumR d (fun a => x a * Q2R (Mq N a b)).

Lemma entry_form N D a b : entry (form N D) a b = Q2R (Mq N a b) / IZR (Z.pos D).
Proof.
  unfold entry, form, Mq.
  change ([] : list Q) with (map (fun n => Qmake n D) []) at 1; rewrite map_nth.
  destruct (Nat.lt_ge_cases b (length (nth a N []))) as [H|H].
  - rewrite nth_indep with (d' := Qmake 0 D) by (rewrite map_length; auto).
    rewrite (map_nth (fun n => Qmake n D)), Q2R_pair, Q2R_int; reflexivity.
  - rewrite !nth_overflow by (rewrite ?map_length; lia). rewrite Q2R_0, Q2R_int; unfold Rdiv; ring.
Qed.

Lemma functional_form d N D x b : functional d (form N D) x b = functional_int d N x b / IZR (Z.pos D).
Proof.
  unfold functional, functional_int, Rdiv; rewrite Rmult_comm, sumR_scale; apply sumR_ext; intros.
  rewrite entry_form; unfold Rdiv; ring.
Qed.

Lemma functional_sound d N box c b : (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  within (g_iv d N box b) (functional_int d N (content_token d c) b).
Proof.
  intros Hd Hl Hc; apply sum_iv_sound; intros a Ha; apply scale_sound, query_iv_sound; auto.
Qed.

Lemma nth_G d N box b : (b < d)%nat -> nth b (map (g_iv d N box) (seq 0 d)) (0, 0)%Q = g_iv d N box b.
Proof.
  intro H; rewrite nth_indep with (d' := g_iv d N box 0%nat) by (rewrite map_length, seq_length; auto).
  rewrite map_nth, seq_nth by auto. reflexivity.
Qed.

Lemma gap_sound d N D box c (y : nat -> R) (yv : nat -> iv) :
  (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (forall b, (b < d)%nat -> within (yv b) (y b - bos_token b)) ->
  score d (form N D) (content_token d c) y - score d (form N D) (content_token d c) bos_token
    <= Q2R (gap_up d D (map (g_iv d N box) (seq 0 d)) yv).
Proof.
  intros Hd Hl Hc Hy; rewrite gap_form; unfold gap_up.
  rewrite Q2R_red, Q2R_mult, sumQ_sound, Q2R_pair, Rmult_comm, sumR_scale; apply sumR_le; intros b Hb.
  rewrite functional_form, nth_G by auto.
  assert (0 < IZR (Z.pos D)) by (apply IZR_lt; lia).
  replace (functional_int d N (content_token d c) b / IZR (Z.pos D) * (y b - bos_token b))
    with (IZR 1 / IZR (Z.pos D) * (functional_int d N (content_token d c) b * (y b - bos_token b)))
    by (field; lra).
  apply Rmult_le_compat_l; [unfold Rdiv; rewrite Rmult_1_l; left; apply Rinv_0_lt_compat; auto|].
  apply mul_hi_sound; [apply functional_sound|apply Hy]; auto.
Qed.

Ltac key_cases :=
  repeat match goal with
         | |- context [(?a =? ?b)%nat] => destruct (Nat.eqb_spec a b)
         | |- context [is_content ?d ?a] =>
             let E := fresh in destruct (is_content d a) eqn:E; [apply is_content_true in E|]
         end; cbn [fst snd]; try lia; unfold Q2R; simpl; lra.

Lemma content_key_sound d c b : (4 <= d)%nat -> in_content_box d c ->
  within (content_key d b) (content_token d c b - bos_token b).
Proof.
  intros Hd Hc; unfold within, content_key, content_token, bos_token.
  destruct (is_content d b) eqn:E; [pose proof (Hc b E); apply is_content_true in E|]; key_cases.
Qed.

Lemma trigger_key_sound d c b : (4 <= d)%nat -> in_content_box d c ->
  within (trigger_key d b) (trigger_token d c b - bos_token b).
Proof.
  intros Hd Hc; unfold within, trigger_key, trigger_token, bos_token.
  destruct (is_content d b) eqn:E; [pose proof (Hc b E); apply is_content_true in E|]; key_cases.
Qed.

Lemma self_key_sound d box c b : (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (b < d)%nat -> within (self_key d box b) (content_token d c b - bos_token b).
Proof.
  intros Hd Hl Hc Hb; unfold self_key.
  destruct (Nat.eqb_spec b 0) as [->|Hb0].
  - unfold within, content_token, bos_token.
    destruct (Nat.eqb_spec 0 (d - 1)); [lia|].
    replace (is_content d 0) with false by reflexivity. cbn [fst snd Nat.eqb]; unfold Q2R; simpl; lra.
  - pose proof (query_iv_sound d box c b Hd Hl Hc Hb) as H; unfold within in *.
    unfold bos_token; destruct (Nat.eqb_spec b 0); [lia|]. lra.
Qed.

(* ---------- exp through the tables ---------- *)

Lemma exp_mono x y : x <= y -> exp x <= exp y.
Proof. intros [H|H]; [left; apply exp_increasing; auto | rewrite H; lra]. Qed.

Lemma lookup_sound s t z e : table_ok s t -> lookup t z = Some e -> exp (IZR z / IZR s) <= Q2R e.
Proof.
  unfold lookup, table_ok; intros Ht Hf; destruct (find _ t) as [p|] eqn:F; inversion Hf; subst.
  apply find_some in F as [Hin Heq]; apply Z.eqb_eq in Heq; subst z.
  rewrite Forall_forall in Ht; apply (Ht p Hin).
Qed.

Lemma exp_small x : 0 <= x < 1 -> exp x <= / (1 - x).
Proof.
  intros H; pose proof (exp_ineq1_le (- x)).
  assert (exp x * exp (- x) = 1) by (rewrite <- exp_plus; replace (x + - x) with 0 by ring; apply exp_0).
  pose proof (exp_pos x). pose proof (exp_pos (- x)).
  replace (exp x) with (/ exp (- x)) by (field_simplify_eq; [lra | lra]).
  apply Rinv_le_contravar; lra.
Qed.

Lemma exp_up_sound T u e : tables_ok T -> exp_up T u = Some e -> exp (Q2R u) <= Q2R e.
Proof.
  intros [T1 [T2 T3]]; unfold exp_up.
  set (a := Qfloor u). set (r1 := Qred (u - inject_Z a)). set (b := Qfloor (r1 * 32)).
  set (r2 := Qred (r1 - Qmake b 32)). set (c := Qfloor (r2 * 1024)). set (x := Qred (r2 - Qmake c 1024)).
  destruct (lookup (units T) a) as [e1|] eqn:L1; [|discriminate].
  destruct (lookup (thirty_seconds T) b) as [e2|] eqn:L2; [|discriminate].
  destruct (lookup (kilo T) c) as [e3|] eqn:L3; [|discriminate].
  destruct (Qle_bool 0 x && negb (Qle_bool 1 x))%bool eqn:Hx; [|discriminate].
  intro He; assert (He' : Qred (e1 * e2 * e3 / (1 - x)) = e) by (injection He; auto); subst e; clear He.
  apply andb_true_iff in Hx as [Hx0 Hx1]; apply Qle_bool_R in Hx0; rewrite Q2R_0 in Hx0.
  apply negb_true_iff, Qle_bool_false_R in Hx1; replace (Q2R 1) with 1 in Hx1 by (unfold Q2R; simpl; lra).
  apply (lookup_sound _ _ _ _ T1) in L1; apply (lookup_sound _ _ _ _ T2) in L2;
    apply (lookup_sound _ _ _ _ T3) in L3.
  assert (Hu : Q2R u = IZR a / IZR 1 + IZR b / IZR 32 + IZR c / IZR 1024 + Q2R x).
  { unfold x, r2, r1; repeat (rewrite Q2R_red || rewrite Q2R_minus). rewrite Q2R_int, !Q2R_pair. simpl; field. }
  rewrite Hu, !exp_plus, Q2R_red, Q2R_div, !Q2R_mult, Q2R_minus by
      (intro E; apply Qeq_eqR in E; rewrite Q2R_minus, Q2R_0 in E;
       replace (Q2R 1) with 1 in E by (unfold Q2R; simpl; lra); lra).
  replace (Q2R 1) with 1 by (unfold Q2R; simpl; lra).
  pose proof (exp_small (Q2R x) (conj Hx0 Hx1)).
  pose proof (exp_pos (IZR a / IZR 1)). pose proof (exp_pos (IZR b / IZR 32)).
  pose proof (exp_pos (IZR c / IZR 1024)). pose proof (exp_pos (Q2R x)).
  unfold Rdiv at 4. repeat apply Rmult_le_compat; try lra; try nra.
  apply Rmult_le_pos; [apply Rmult_le_pos|]; lra.
Qed.
