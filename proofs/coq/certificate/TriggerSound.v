(* trigger_certificate_sound: a checked trigger certificate proves max_bos_mass_at_trigger_at_most. *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head Checker Sound Certified TriggerChecker.

Open Scope R_scope.

Lemma corner_ge a b c e g y : a <= g <= b -> c <= y <= e ->
  a * c <= g * y \/ a * e <= g * y \/ b * c <= g * y \/ b * e <= g * y.
Proof.
  intros [Ha Hb] [Hc He]. destruct (Rle_dec 0 y).
  - destruct (Rle_dec 0 a); [left; nra | right; left; nra].
  - destruct (Rle_dec 0 b); [right; right; left; nra | right; right; right; nra].
Qed.

Lemma min_le_l x y : Q2R (Qmin x y) <= Q2R x.
Proof. apply Qle_Rle, Q.le_min_l. Qed.
Lemma min_le_r x y : Q2R (Qmin x y) <= Q2R y.
Proof. apply Qle_Rle, Q.le_min_r. Qed.

Lemma mul_lo_sound x y g v : within x g -> within y v -> Q2R (mul_lo x y) <= g * v.
Proof.
  unfold within, mul_lo; intros Hx Hy; rewrite Q2R_red.
  pose proof (min_le_l (Qmin (fst x * fst y) (fst x * snd y)) (Qmin (snd x * fst y) (snd x * snd y))).
  pose proof (min_le_r (Qmin (fst x * fst y) (fst x * snd y)) (Qmin (snd x * fst y) (snd x * snd y))).
  pose proof (min_le_l (fst x * fst y) (fst x * snd y)). pose proof (min_le_r (fst x * fst y) (fst x * snd y)).
  pose proof (min_le_l (snd x * fst y) (snd x * snd y)). pose proof (min_le_r (snd x * fst y) (snd x * snd y)).
  rewrite !Q2R_mult in *.
  destruct (corner_ge _ _ _ _ _ _ Hx Hy) as [?|[?|[?|?]]]; lra.
Qed.

Lemma trigger_iv_sound d box c a : (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (a < d)%nat -> within (trigger_iv d box a) (trigger_token d c a).
Proof.
  intros Hd Hl Hc Ha; unfold trigger_iv, trigger_token, within.
  destruct (a =? 1)%nat; [cbn [fst snd]; unfold Q2R; simpl; lra|].
  destruct (is_content d a) eqn:E; [|cbn [fst snd]; rewrite Q2R_0; lra].
  apply is_content_true in E. pose proof (Hc (a - 2)%nat ltac:(lia)) as H.
  replace (a - 2 + 2)%nat with a in H by lia. exact H.
Qed.

Lemma trigger_self_key_sound d box c b : (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (b < d)%nat -> within (trigger_self_key d box b) (trigger_token d c b - bos_token b).
Proof.
  intros Hd Hl Hc Hb; unfold trigger_self_key.
  destruct (Nat.eqb_spec b 0) as [->|Hb0].
  - unfold within, trigger_token, bos_token.
    replace (0 =? 1)%nat with false by reflexivity. replace (is_content d 0) with false by reflexivity.
    cbn [fst snd Nat.eqb]; unfold Q2R; simpl; lra.
  - pose proof (trigger_iv_sound d box c b Hd Hl Hc Hb) as H; unfold within in *.
    unfold bos_token; destruct (Nat.eqb_spec b 0); [lia|]. lra.
Qed.

Lemma nth_GT d N box b : (b < d)%nat -> nth b (map (gt_iv d N box) (seq 0 d)) (0, 0)%Q = gt_iv d N box b.
Proof.
  intro H; rewrite nth_indep with (d' := gt_iv d N box 0%nat) by (rewrite map_length, seq_length; auto).
  rewrite map_nth, seq_nth by auto. reflexivity.
Qed.

Lemma gap_lo_sound d N D box c (y : nat -> R) (yv : nat -> iv) :
  (4 <= d)%nat -> length box = (d - 3)%nat -> in_qbox box c ->
  (forall b, (b < d)%nat -> within (yv b) (y b - bos_token b)) ->
  Q2R (gap_lo d D (map (gt_iv d N box) (seq 0 d)) yv)
    <= score d (form N D) (trigger_token d c) y - score d (form N D) (trigger_token d c) bos_token.
Proof.
  intros Hd Hl Hc Hy; rewrite gap_form; unfold gap_lo.
  rewrite Q2R_red, Q2R_mult, sumQ_sound, Q2R_pair, Rmult_comm, sumR_scale; apply sumR_le; intros b Hb.
  rewrite functional_form, nth_GT by auto.
  assert (0 < IZR (Z.pos D)) by (apply IZR_lt; lia).
  replace (functional_int d N (trigger_token d c) b / IZR (Z.pos D) * (y b - bos_token b))
    with (IZR 1 / IZR (Z.pos D) * (functional_int d N (trigger_token d c) b * (y b - bos_token b)))
    by (field; lra).
  apply Rmult_le_compat_l; [unfold Rdiv; rewrite Rmult_1_l; left; apply Rinv_0_lt_compat; auto|].
  apply mul_lo_sound; [|apply Hy; auto].
  apply sum_iv_sound; intros a Ha; apply scale_sound, trigger_iv_sound; auto.
Qed.

Lemma lookup_lo_sound s t z e : table_lo_ok s t -> lookup t z = Some e -> Q2R e <= exp (IZR z / IZR s).
Proof.
  unfold lookup, table_lo_ok; intros Ht Hf; destruct (find _ t) as [p|] eqn:F; inversion Hf; subst.
  apply find_some in F as [Hin Heq]; apply Z.eqb_eq in Heq; subst z.
  rewrite Forall_forall in Ht; apply (Ht p Hin).
Qed.

Lemma exp_down_sound T u e : tables_lo_ok T -> exp_down T u = Some e -> 0 <= Q2R e <= exp (Q2R u).
Proof.
  intros [T1 [T2 T3]]; unfold exp_down.
  set (a := Qfloor u). set (r1 := Qred (u - inject_Z a)). set (b := Qfloor (r1 * 32)).
  set (r2 := Qred (r1 - Qmake b 32)). set (c := Qfloor (r2 * 1024)). set (x := Qred (r2 - Qmake c 1024)).
  destruct (lookup (units T) a) as [e1|] eqn:L1; [|discriminate].
  destruct (lookup (thirty_seconds T) b) as [e2|] eqn:L2; [|discriminate].
  destruct (lookup (kilo T) c) as [e3|] eqn:L3; [|discriminate].
  destruct (Qle_bool 0 x && Qle_bool 0 e1 && Qle_bool 0 e2 && Qle_bool 0 e3)%bool eqn:Hx; [|discriminate].
  intro He; assert (He' : Qred (e1 * e2 * e3 * (1 + x)) = e) by (injection He; auto); subst e; clear He.
  apply andb_true_iff in Hx as [Hx H3]; apply andb_true_iff in Hx as [Hx H2];
    apply andb_true_iff in Hx as [Hx H1].
  apply Qle_bool_R in Hx, H1, H2, H3; rewrite Q2R_0 in Hx, H1, H2, H3.
  apply (lookup_lo_sound _ _ _ _ T1) in L1; apply (lookup_lo_sound _ _ _ _ T2) in L2;
    apply (lookup_lo_sound _ _ _ _ T3) in L3.
  assert (Hu : Q2R u = IZR a / IZR 1 + IZR b / IZR 32 + IZR c / IZR 1024 + Q2R x).
  { unfold x, r2, r1; repeat (rewrite Q2R_red || rewrite Q2R_minus). rewrite Q2R_int, !Q2R_pair. simpl; field. }
  rewrite Hu, !exp_plus, Q2R_red, !Q2R_mult, Q2R_plus.
  replace (Q2R 1) with 1 by (unfold Q2R; simpl; lra).
  pose proof (exp_ineq1_le (Q2R x)).
  assert (P12 : 0 <= Q2R e1 * Q2R e2) by nra.
  assert (P123 : 0 <= Q2R e1 * Q2R e2 * Q2R e3) by nra.
  split; [nra|].
  apply Rmult_le_compat; [exact P123 | lra | | lra].
  apply Rmult_le_compat; [exact P12 | lra | | exact L3].
  apply Rmult_le_compat; [lra | lra | exact L1 | exact L2].
Qed.

Definition trigger_bounds (d L : nat) (M : list (list Q)) (p : Q) (c : nat -> R) : Prop :=
  let x := trigger_token d c in
  exists eC eS, 0 <= eC /\ 0 <= eS /\ 1 <= Q2R p * (1 + eC + eS) /\
    (forall c', in_content_box d c' -> eC <= exp (score d M x (content_token d c') - score d M x bos_token)) /\
    eS <= exp (score d M x x - score d M x bos_token).

Lemma trigger_leaf_sound d L N D T p box c : (4 <= d)%nat -> tables_lo_ok T -> length box = (d - 3)%nat ->
  trigger_leaf_ok d N D T p box = true -> in_qbox box c -> trigger_bounds d L (form N D) p c.
Proof.
  intros Hd HT Hl Hok Hc; unfold trigger_leaf_ok in Hok.
  set (G := map (gt_iv d N box) (seq 0 d)) in Hok.
  destruct (exp_down T (gap_lo d D G (content_key d))) as [eC|] eqn:EC; [|discriminate].
  destruct (exp_down T (gap_lo d D G (trigger_self_key d box))) as [eS|] eqn:ES; [|discriminate].
  apply Qle_bool_R in Hok; rewrite Q2R_mult, !Q2R_plus in Hok.
  replace (Q2R 1) with 1 in Hok by (unfold Q2R; simpl; lra).
  apply (exp_down_sound T _ _ HT) in EC, ES.
  exists (Q2R eC), (Q2R eS); repeat split; try lra.
  - intros c' Hc'; eapply Rle_trans; [apply EC|]. apply exp_mono, gap_lo_sound; auto.
    intros; apply content_key_sound; auto.
  - eapply Rle_trans; [apply ES|]. apply exp_mono, gap_lo_sound; auto.
    intros; apply trigger_self_key_sound; auto.
Qed.

Theorem trigger_certificate_sound d L N D T p t :
  tables_lo_ok T -> trigger_certificate_ok d L N D T p t = true -> max_bos_mass_at_trigger_at_most d L (form N D) p.
Proof.
  intros HT Hc; unfold trigger_certificate_ok in Hc.
  apply andb_true_iff in Hc as [Hc Htree]; apply andb_true_iff in Hc as [Hd HL].
  apply Nat.leb_le in Hd, HL.
  intros j C Hj HC.
  assert (HP : trigger_bounds d L (form N D) p (C j)).
  { apply (check_tree_sound (trigger_leaf_ok d N D T p) (trigger_bounds d L (form N D) p) (d - 3))
      with t (root (d - 3)); auto.
    - intros box c Hl Hok Hin; apply (trigger_leaf_sound d L N D T p box c); auto.
    - unfold root; apply repeat_length.
    - apply root_sound, HC; lia. }
  destruct HP as (eC & eS & HeC & HeS & Hp & HgC & HgS).
  set (X := sequence d j C).
  assert (HX0 : X 0%nat = bos_token) by reflexivity.
  assert (HXj : X j = trigger_token d (C j)).
  { unfold X, sequence; destruct (Nat.eqb_spec j 0); [lia|]; rewrite Nat.eqb_refl; reflexivity. }
  assert (HX1 : X 1%nat = content_token d (C 1%nat)).
  { unfold X, sequence; destruct (Nat.eqb_spec 1 j); [lia|]; reflexivity. }
  set (s := fun k => score d (form N D) (X j) (X k)).
  set (Tsum := sumR j (fun k => exp (s (S k) - s 0%nat))).
  assert (Hw : bos_weight d (form N D) X j = / (1 + Tsum)).
  { assert (0 <= Tsum) by (apply sumR_nonneg; intros; left; apply exp_pos).
    unfold bos_weight; change (exp (s 0%nat) / sumR (S j) (fun k => exp (s k)) = / (1 + Tsum)).
    rewrite sumR_shift.
    assert (E : sumR j (fun k => exp (s (S k))) = exp (s 0%nat) * Tsum).
    { unfold Tsum; rewrite sumR_scale; apply sumR_ext; intros; rewrite <- exp_plus; f_equal; ring. }
    rewrite E; pose proof (exp_pos (s 0%nat)); field; split; nra. }
  assert (HTb : eC + eS <= Tsum).
  { unfold Tsum; destruct j as [|m]; [lia|]; cbn [sumR].
    assert (Hself : eS <= exp (s (S m) - s 0%nat)) by (unfold s; rewrite HX0, HXj; exact HgS).
    assert (Hfirst : eC <= exp (s 1%nat - s 0%nat)) by (unfold s; rewrite HX0, HXj, HX1; apply HgC, HC; lia).
    destruct m as [|m']; [lia|].
    rewrite sumR_shift.
    assert (0 <= sumR m' (fun k => exp (s (S (S k)) - s 0%nat))) by (apply sumR_nonneg; intros; left; apply exp_pos).
    lra. }
  fold X; rewrite Hw.
  assert (0 < 1 + eC + eS) by lra.
  assert (0 < Q2R p) by nra.
  apply Rmult_le_reg_r with (1 + Tsum); [lra|]. rewrite Rinv_l by lra. nra.
Qed.
