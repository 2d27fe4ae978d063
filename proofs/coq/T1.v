(** T1 (proofs/t1_single_layer_sink.py): a single softmax head with small worst-case error must
    sink. (a) before the trigger (L >= 4, eta <= 1/12): a_i0 >= 1 - f_pre(eta); (b) at every
    non-trigger query (L >= 5, eta <= 1/120): a_i0 >= 1 - f_all(eta); (c) eta = 0 is impossible. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Facts Sinks.Task Sinks.Heads Sinks.BosQuery
  Sinks.TokenConsistency Sinks.DirectionBound Sinks.ContentFlag Sinks.RatioBound Sinks.FlagSum.
Open Scope R_scope.

Definition f_pre (eta : R) : R := 12 * eta / (5 - 12 * eta).
Definition f_all (eta : R) : R := 4 * eta / (m_r eta + 2 * eta).

(** T1 (a): every query 1 <= i < j has a_i0 >= 1 - f_pre(eta). *)
Definition T1a : Prop :=
  forall d L (h : head) eta, (4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->
  worst_error_le d L (head_output Softmax d h) eta ->
  forall j cs i, valid_trigger L j -> in_box d L cs -> (1 <= i < j)%nat ->
  1 - f_pre eta <= softmax_weight d h (sequence d j cs) i 0.

(** T1 (b): every non-trigger query i <> j, before or after the trigger, has a_i0 >= 1 - f_all(eta). *)
Definition T1b : Prop :=
  forall d L (h : head) eta, (4 <= d)%nat -> (5 <= L)%nat -> eta <= 1 / 120 ->
  worst_error_le d L (head_output Softmax d h) eta ->
  forall j cs i, valid_trigger L j -> in_box d L cs -> (i < L)%nat -> i <> j ->
  1 - f_all eta <= softmax_weight d h (sequence d j cs) i 0.

(** T1 (c): no softmax head solves the task exactly. *)
Definition T1c : Prop :=
  forall d L (h : head), (4 <= d)%nat -> (4 <= L)%nat -> ~ worst_error_le d L (head_output Softmax d h) 0.

Section Query.
Variables (d L : nat) (h : head) (eta : R).
Hypothesis Hd : (4 <= d)%nat.
Hypothesis HL : (4 <= L)%nat.
Hypothesis Herr : worst_error_le d L (head_output Softmax d h) eta.

Lemma error_nonneg : 0 <= eta.
Proof.
  apply abs_le_nonneg with (x := value d h (bos d) 0%nat).
  apply (proj2 (bos_query_sees_only_bos d L h eta Hd HL Herr)). lia.
Qed.

(** At a non-trigger query the target is 0, so every output coordinate is within eta of 0. *)
Lemma output_off_trigger : forall j cs i r, valid_trigger L j -> in_box d L cs -> (i < L)%nat -> i <> j ->
  (r < d)%nat -> - eta <= head_output Softmax d h (sequence d j cs) i r <= eta.
Proof.
  intros j cs i r Hj Hb Hi Hij Hr. apply abs_le_bounds.
  pose proof (Herr j cs i r Hj Hb Hi Hr) as H. rewrite target_off_trigger, Rminus_0_r in H by assumption.
  exact H.
Qed.

(** The direction bound at query i, for value images read along p with the output's reading <= eps. *)
Lemma sink_at_query : forall X i (p : nat -> R) m beta eps,
  - beta <= p 0%nat -> (forall k, (1 <= k <= i)%nat -> m <= p k) ->
  sum (S i) (fun k => softmax_weight d h X i k * p k) <= eps -> 0 < m + beta ->
  (m - eps) / (m + beta) <= softmax_weight d h X i 0.
Proof.
  intros X i p m beta eps H0 Hk Ho Hmb. apply (sink_bound_direction_core i _ p); try assumption.
  - intros. left. apply softmax_weight_pos.
  - apply softmax_weights_sum.
Qed.
End Query.

Theorem t1a_pre_trigger : T1a.
Proof.
  intros d L h eta Hd HL He Herr j cs i Hj Hb Hi.
  pose proof (error_nonneg d L h eta Hd HL Herr) as He0.
  unfold valid_trigger in Hj.
  assert (H := sink_at_query d h (sequence d j cs) i (fun k => value d h (sequence d j cs k) (content_flag d))
                 (5 / 6 - 3 * eta) eta eta).
  replace ((5 / 6 - 3 * eta - eta) / (5 / 6 - 3 * eta + eta)) with (1 - f_pre eta) in H
    by (unfold f_pre; field; repeat split; lra).
  apply H.
  - rewrite sequence_bos. apply (abs_le_bounds _ _ (proj2 (bos_query_sees_only_bos d L h eta Hd HL Herr)
      (content_flag d) ltac:(unfold content_flag; lia))).
  - intros k Hk. rewrite sequence_content by lia.
    apply (content_flag_worst d L h eta Hd HL He Herr). apply Hb. lia.
  - rewrite <- softmax_output_images.
    apply (output_off_trigger d L h eta Herr j cs i); unfold valid_trigger, content_flag; auto; lia.
  - lra.
Qed.

Theorem t1b_every_non_trigger_query : T1b.
Proof.
  intros d L h eta Hd HL He Herr j cs i Hj Hb Hi Hij.
  assert (HL4 : (4 <= L)%nat) by lia.
  pose proof (error_nonneg d L h eta Hd HL4 Herr) as He0.
  pose proof (m_r_pos eta (conj He0 He)) as Hm.
  assert (H := sink_at_query d h (sequence d j cs) i
                 (fun k => value d h (sequence d j cs k) trigger_flag + value d h (sequence d j cs k) (content_flag d))
                 (m_r eta) (2 * eta) (2 * eta)).
  replace ((m_r eta - 2 * eta) / (m_r eta + 2 * eta)) with (1 - f_all eta) in H by (unfold f_all; field; repeat split; lra).
  apply H.
  - rewrite sequence_bos. destruct (bos_query_sees_only_bos d L h eta Hd HL4 Herr) as (_ & Hbos).
    pose proof (abs_le_bounds _ _ (Hbos trigger_flag ltac:(unfold trigger_flag; lia))).
    pose proof (abs_le_bounds _ _ (Hbos (content_flag d) ltac:(unfold content_flag; lia))). lra.
  - intros k Hk. destruct (Nat.eq_dec k j) as [->|Hkj].
    + rewrite sequence_trigger by (unfold valid_trigger in Hj; lia).
      apply (flag_sum_worst d L h eta Hd HL He Herr). apply Hb. lia.
    + rewrite sequence_content by lia.
      apply (flag_sum_worst d L h eta Hd HL He Herr). apply Hb. lia.
  - rewrite (sum_ext _ _ (fun k => softmax_weight d h (sequence d j cs) i k * value d h (sequence d j cs k) trigger_flag
                          + softmax_weight d h (sequence d j cs) i k * value d h (sequence d j cs k) (content_flag d)))
      by (intros; ring).
    rewrite sum_plus. rewrite <- !softmax_output_images.
    pose proof (output_off_trigger d L h eta Herr j cs i trigger_flag Hj Hb Hi Hij ltac:(unfold trigger_flag; lia)).
    pose proof (output_off_trigger d L h eta Herr j cs i (content_flag d) Hj Hb Hi Hij ltac:(unfold content_flag; lia)).
    lra.
  - lra.
Qed.

Theorem t1c_exact_is_impossible : T1c.
Proof.
  intros d L h Hd HL Herr.
  assert (Ha := t1a_pre_trigger d L h 0 Hd HL ltac:(lra) Herr 2%nat (fun _ _ => 0) 1%nat
                  ltac:(unfold valid_trigger; lia) (equal_content_in_box d L _ (zero_content_in_box d)) ltac:(lia)).
  replace (f_pre 0) with 0 in Ha by (unfold f_pre; field).
  pose proof (softmax_weights_sum d h (sequence d 2 (fun _ _ => 0)) 1%nat) as Hs.
  pose proof (softmax_weight_pos d h (sequence d 2 (fun _ _ => 0)) 1%nat 1%nat) as Hp.
  simpl sum in Hs. lra.
Qed.

(** T1 as one statement: (a), (b) and (c). *)
Theorem t1_single_layer_sink : T1a /\ T1b /\ T1c.
Proof. exact (conj t1a_pre_trigger (conj t1b_every_non_trigger_query t1c_exact_is_impossible)). Qed.
