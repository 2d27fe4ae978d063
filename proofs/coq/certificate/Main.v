(* certificate_sound: a certificate the checker accepts proves min_bos_mass_at_least (Head.v). *)

From Coq Require Import Reals QArith Qreals Qround Qminmax Lra Lia List ZArith Bool.
Import ListNotations.
From SinksCert Require Import Head Checker Sound Certified.

Open Scope R_scope.

(* What a leaf establishes for a query content c: bounds on exp of each kind of key's score gap
   to BOS, over every content of that key, that sum to at most Rc with L - 3 content keys. *)
Definition gap_bounds (d L : nat) (M : list (list Q)) (Rc : Q) (c : nat -> R) : Prop :=
  let x := content_token d c in
  exists eC eT eS, 0 <= eC /\ 0 <= eT /\ INR (L - 3) * eC + eT + eS <= Q2R Rc /\
    (forall c', in_content_box d c' -> exp (score d M x (content_token d c') - score d M x bos_token) <= eC) /\
    (forall c', in_content_box d c' -> exp (score d M x (trigger_token d c') - score d M x bos_token) <= eT) /\
    exp (score d M x x - score d M x bos_token) <= eS.

Lemma leaf_sound d L N D T Rc box c : (4 <= d)%nat -> tables_ok T -> length box = (d - 3)%nat ->
  leaf_ok d L N D T Rc box = true -> in_qbox box c -> gap_bounds d L (form N D) Rc c.
Proof.
  intros Hd HT Hl Hok Hc; unfold leaf_ok in Hok.
  set (G := map (g_iv d N box) (seq 0 d)) in Hok.
  destruct (exp_up T (gap_up d D G (content_key d))) as [eC|] eqn:EC; [|discriminate].
  destruct (exp_up T (gap_up d D G (trigger_key d))) as [eT|] eqn:ET; [|discriminate].
  destruct (exp_up T (gap_up d D G (self_key d box))) as [eS|] eqn:ES; [|discriminate].
  apply Qle_bool_R in Hok; rewrite !Q2R_plus, Q2R_mult, Q2R_int, <- INR_IZR_INZ in Hok.
  apply (exp_up_sound T _ _ HT) in EC, ET, ES.
  assert (HC : forall c', in_content_box d c' -> exp (score d (form N D) (content_token d c) (content_token d c')
            - score d (form N D) (content_token d c) bos_token) <= Q2R eC).
  { intros c' Hc'; eapply Rle_trans; [apply exp_mono, gap_sound|]; eauto.
    intros; apply content_key_sound; auto. }
  assert (HT' : forall c', in_content_box d c' -> exp (score d (form N D) (content_token d c) (trigger_token d c')
            - score d (form N D) (content_token d c) bos_token) <= Q2R eT).
  { intros c' Hc'; eapply Rle_trans; [apply exp_mono, gap_sound|]; eauto.
    intros; apply trigger_key_sound; auto. }
  assert (HS : exp (score d (form N D) (content_token d c) (content_token d c)
            - score d (form N D) (content_token d c) bos_token) <= Q2R eS).
  { eapply Rle_trans; [apply exp_mono, gap_sound|]; eauto. intros; apply self_key_sound; auto. }
  exists (Q2R eC), (Q2R eT), (Q2R eS); repeat split; auto.
  - pose proof (exp_pos (Q2R (gap_up d D G (content_key d)))); lra.
  - pose proof (exp_pos (Q2R (gap_up d D G (trigger_key d)))); lra.
Qed.

(* Key k = 1..m of a query that is not the trigger: the trigger's term once if j <= m. *)
Lemma count_sum (j m : nat) (eC eT : R) :
  sumR m (fun k => if (S k =? j)%nat then eT else eC) =
  INR m * eC + (if ((1 <=? j)%nat && (j <=? m)%nat)%bool then eT - eC else 0).
Proof.
  induction m; cbn [sumR].
  - destruct (Nat.leb_spec 1 j), (Nat.leb_spec j 0); try lia; simpl; lra.
  - rewrite IHm, S_INR. destruct (Nat.eqb_spec (S m) j) as [<-|Hne].
    + destruct (Nat.leb_spec 1 (S m)), (Nat.leb_spec (S m) m), (Nat.leb_spec (S m) (S m)); try lia; simpl; lra.
    + destruct (Nat.leb_spec 1 j), (Nat.leb_spec j m), (Nat.leb_spec j (S m)); try lia; simpl; lra.
Qed.

Theorem certificate_sound d L N D T Rc q t :
  tables_ok T -> certificate_ok d L N D T Rc q t = true -> min_bos_mass_at_least d L (form N D) q.
Proof.
  intros HT Hc; unfold certificate_ok in Hc.
  apply andb_true_iff in Hc as [Hc Htree]; apply andb_true_iff in Hc as [Hc Hq1].
  apply andb_true_iff in Hc as [Hc Hq0]; apply andb_true_iff in Hc as [Hd HL].
  apply Nat.leb_le in Hd, HL; apply Qle_bool_R in Hq0, Hq1; rewrite Q2R_0 in Hq0.
  rewrite Q2R_mult, Q2R_plus in Hq1; replace (Q2R 1) with 1 in Hq1 by (unfold Q2R; simpl; lra).
  intros j C Hj HC i Hi Hij.
  assert (HP : gap_bounds d L (form N D) Rc (C i)).
  { apply (check_tree_sound (leaf_ok d L N D T Rc) (gap_bounds d L (form N D) Rc) (d - 3)) with t (root (d - 3));
      auto.
    - intros box c Hl Hok Hin; apply (leaf_sound d L N D T Rc box c); auto.
    - unfold root; apply repeat_length.
    - apply root_sound, HC; lia. }
  destruct HP as (eC & eT & eS & HeC & HeT & HR & HgC & HgT & HgS).
  set (X := sequence d j C).
  assert (HX0 : X 0%nat = bos_token) by reflexivity.
  assert (HXi : X i = content_token d (C i)).
  { unfold X, sequence; destruct (Nat.eqb_spec i 0); [lia|]; destruct (Nat.eqb_spec i j); [lia|]; reflexivity. }
  set (s := fun k => score d (form N D) (X i) (X k)).
  set (Tsum := sumR i (fun k => exp (s (S k) - s 0%nat))).
  assert (HT0 : 0 <= Tsum) by (apply sumR_nonneg; intros; left; apply exp_pos).
  assert (Hw : bos_weight d (form N D) X i = / (1 + Tsum)).
  { unfold bos_weight; change (exp (s 0%nat) / sumR (S i) (fun k => exp (s k)) = / (1 + Tsum)).
    rewrite sumR_shift.
    assert (E : sumR i (fun k => exp (s (S k))) = exp (s 0%nat) * Tsum).
    { unfold Tsum; rewrite sumR_scale; apply sumR_ext; intros; rewrite <- exp_plus; f_equal; ring. }
    rewrite E; pose proof (exp_pos (s 0%nat)); field; split; nra. }
  assert (HTb : Tsum <= INR (L - 3) * eC + eT + eS).
  { unfold Tsum; destruct i as [|m]; [lia|]; cbn [sumR].
    assert (Hself : exp (s (S m) - s 0%nat) <= eS) by (unfold s; rewrite HX0, HXi; exact HgS).
    assert (Hkeys : sumR m (fun k => exp (s (S k) - s 0%nat))
                    <= sumR m (fun k => if (S k =? j)%nat then eT else eC)).
    { apply sumR_le; intros k Hk; unfold s; rewrite HX0, HXi; unfold X, sequence.
      rewrite (proj2 (Nat.eqb_neq (S k) 0)) by lia.
      destruct (Nat.eqb_spec (S k) j); [apply HgT | apply HgC]; apply HC; lia. }
    rewrite count_sum in Hkeys.
    destruct (Nat.leb_spec 1 j), (Nat.leb_spec j m); try lia; simpl in Hkeys.
    - assert (INR m <= INR (L - 3) + 1) by (rewrite <- S_INR; apply le_INR; lia). nra.
    - assert (INR m <= INR (L - 3)) by (apply le_INR; lia). nra. }
  fold X; rewrite Hw.
  apply Rmult_le_reg_r with (1 + Tsum); [lra|]. rewrite Rinv_l by lra. nra.
Qed.
