(** T1 step 2 (proofs/token_consistency.py, proofs/trigger_rows.py): token consistency. The head
    has no positional encoding, so a score depends only on the two tokens' features: equal keys
    get equal weights. On the equal-content sequence S_j(c) the trigger row is therefore
    (A, B, ..., B, C) / Z_j with Z_j = A + (j-1) B + C, and A, B, C do not depend on j. *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear Sinks.Task Sinks.Heads Sinks.BosQuery.
Open Scope R_scope.

(** Equal keys get equal weights, whatever their positions. *)
Theorem equal_keys_equal_weights : forall d h X i k k', (forall r, (r < d)%nat -> X k r = X k' r) ->
  softmax_weight d h X i k = softmax_weight d h X i k'.
Proof.
  intros d h X i k k' Hk. unfold softmax_weight.
  rewrite (score_ext d h (X i) (X i) (X k) (X k')) by (auto || (intros; reflexivity)). reflexivity.
Qed.

(** The unnormalised weights of the trigger query with content c on BOS, on a content token
    with content c and on itself. *)
Definition trigger_A (d : nat) (h : head) (c : content) : R := exp (score d h (trigger_token d c) (bos d)).
Definition trigger_B (d : nat) (h : head) (c : content) : R := exp (score d h (trigger_token d c) (content_token d c)).
Definition trigger_C (d : nat) (h : head) (c : content) : R := exp (score d h (trigger_token d c) (trigger_token d c)).

Lemma trigger_ABC_pos : forall d h c, 0 < trigger_A d h c /\ 0 < trigger_B d h c /\ 0 < trigger_C d h c.
Proof. intros. unfold trigger_A, trigger_B, trigger_C. repeat split; apply exp_pos. Qed.

(** A row with value a at key 0, b at keys 1 .. j-1 and c at key j sums to a + (j-1) b + c. *)
Lemma sum_row_of_three : forall j f a b c, (1 <= j)%nat -> f 0%nat = a ->
  (forall k, (1 <= k < j)%nat -> f k = b) -> f j = c -> sum (S j) f = a + INR (j - 1) * b + c.
Proof.
  intros j f a b c Hj H0 Hb Hc. change (sum (S j) f) with (sum j f + f j).
  destruct j as [|j]; [lia|]. rewrite sum_first, H0, Hc.
  rewrite (sum_const j b) by (intros; apply Hb; lia). replace (S j - 1)%nat with j by lia. lra.
Qed.

Section TriggerRow.
Variables (d : nat) (h : head) (c : content) (j : nat).
Hypothesis Hj : (1 <= j)%nat.

Let X := equal_content d j c.
Let A := trigger_A d h c.
Let B := trigger_B d h c.
Let C := trigger_C d h c.

Lemma trigger_row_scores : forall k, (k <= j)%nat ->
  exp (score d h (X j) (X k)) = if Nat.eqb k 0 then A else if Nat.eqb k j then C else B.
Proof.
  intros k Hk. unfold X, equal_content. rewrite sequence_trigger by assumption.
  destruct (Nat.eqb_spec k 0) as [->|H0]; [reflexivity|].
  destruct (Nat.eqb_spec k j) as [->|Hkj].
  - rewrite sequence_trigger by assumption. reflexivity.
  - rewrite sequence_content by lia. reflexivity.
Qed.

Lemma trigger_row_normaliser : sum (S j) (fun k => exp (score d h (X j) (X k))) = A + INR (j - 1) * B + C.
Proof.
  apply sum_row_of_three; [assumption | | |].
  - rewrite trigger_row_scores by lia. reflexivity.
  - intros k Hk. rewrite trigger_row_scores by lia.
    destruct (Nat.eqb_spec k 0); [lia|]. destruct (Nat.eqb_spec k j); [lia|]. reflexivity.
  - rewrite trigger_row_scores by lia. destruct (Nat.eqb_spec j 0); [lia|]. rewrite Nat.eqb_refl. reflexivity.
Qed.

(** The trigger row of S_j(c): weights A/Z_j, B/Z_j (j - 1 times), C/Z_j. *)
Theorem trigger_row_weights : forall k, (k <= j)%nat ->
  softmax_weight d h X j k = (if Nat.eqb k 0 then A else if Nat.eqb k j then C else B) / (A + INR (j - 1) * B + C).
Proof.
  intros k Hk. unfold softmax_weight. rewrite trigger_row_normaliser, trigger_row_scores by assumption. reflexivity.
Qed.

(** Its output along any coordinate r: (A u_b + (j-1) B u_t + C u_r) / Z_j. *)
Theorem trigger_row_output : forall r,
  head_output Softmax d h X j r =
  (A * value d h (bos d) r + INR (j - 1) * B * value d h (content_token d c) r + C * value d h (trigger_token d c) r)
  / (A + INR (j - 1) * B + C).
Proof.
  intros r. rewrite head_output_images. simpl weight.
  assert (HZ : 0 < A + INR (j - 1) * B + C).
  { destruct (trigger_ABC_pos d h c) as (HA & HB & HC). fold A B C in HA, HB, HC.
    assert (0 <= INR (j - 1)) by apply pos_INR. nra. }
  rewrite (sum_row_of_three j _ (A / (A + INR (j - 1) * B + C) * value d h (bos d) r)
                                (B / (A + INR (j - 1) * B + C) * value d h (content_token d c) r)
                                (C / (A + INR (j - 1) * B + C) * value d h (trigger_token d c) r)); try assumption.
  - field. lra.
  - rewrite trigger_row_weights by lia. reflexivity.
  - intros k Hk. rewrite trigger_row_weights by lia.
    destruct (Nat.eqb_spec k 0); [lia|]. destruct (Nat.eqb_spec k j); [lia|].
    unfold X, equal_content. rewrite sequence_content by lia. reflexivity.
  - rewrite trigger_row_weights by lia. destruct (Nat.eqb_spec j 0); [lia|]. rewrite Nat.eqb_refl.
    unfold X, equal_content. rewrite sequence_trigger by lia. reflexivity.
Qed.
End TriggerRow.

(** The lemmas' hypothesis (proofs/content_flag_lower_bound.py and the next two): max-abs error
    <= eta on one equal-content sequence S_j(c) only, at every query i < L and coordinate r < d. *)
Definition equal_content_error_le (d L : nat) (f : model) (c : content) (j : nat) (eta : R) : Prop :=
  forall i r, (i < L)%nat -> (r < d)%nat -> Rabs (f (equal_content d j c) i r - target j (equal_content d j c) i r) <= eta.

(** The worst-case hypothesis gives it for every trigger and every content in the box. *)
Lemma worst_error_on_equal_content : forall d L f eta c j, worst_error_le d L f eta -> valid_trigger L j ->
  content_in_box d c -> equal_content_error_le d L f c j eta.
Proof. intros d L f eta c j Herr Hj Hc i r Hi Hr. exact (Herr j (fun _ => c) i r Hj (equal_content_in_box d L c Hc) Hi Hr). Qed.

(** On S_j(c) the BOS query's output is BOS's value image, whose target is 0: |u_0 r| <= eta. *)
Lemma equal_content_bos_value : forall d L h eta c j r, (1 <= j)%nat -> (1 <= L)%nat -> (r < d)%nat ->
  equal_content_error_le d L (head_output Softmax d h) c j eta -> Rabs (value d h (bos d) r) <= eta.
Proof.
  intros d L h eta c j r Hj HL Hr Herr. pose proof (Herr 0%nat r ltac:(lia) Hr) as H.
  rewrite bos_query_output, target_off_trigger, Rminus_0_r in H by lia. exact H.
Qed.

(** The error hypothesis at the trigger of S_j(c), along a coordinate r: the trigger row equation
    A u_b + (j-1) B u_t + C u_r = Z_j (y_j + delta_j) with |delta_j| <= eta. *)
Theorem trigger_row_equation : forall d L h eta c j r,
  equal_content_error_le d L (head_output Softmax d h) c j eta -> valid_trigger L j -> (r < d)%nat ->
  exists delta, Rabs delta <= eta /\
    trigger_A d h c * value d h (bos d) r + INR (j - 1) * trigger_B d h c * value d h (content_token d c) r
      + trigger_C d h c * value d h (trigger_token d c) r
    = (trigger_A d h c + INR (j - 1) * trigger_B d h c + trigger_C d h c)
      * (/ INR j * (INR (j - 1) * content_token d c r + trigger_token d c r) + delta).
Proof.
  intros d L h eta c j r Herr Hj Hr.
  assert (H := Herr j r ltac:(unfold valid_trigger in Hj; lia) Hr).
  unfold valid_trigger in Hj.
  rewrite trigger_row_output, target_equal_content_trigger in H by lia.
  eexists. split; [exact H|].
  destruct (trigger_ABC_pos d h c) as (HA & HB & HC).
  assert (0 <= INR (j - 1)) by apply pos_INR.
  assert (0 < INR j) by (apply lt_0_INR; lia).
  field. split; [lra | nra].
Qed.

(** Along n equal tokens after BOS the BOS mass is A/(A + i B), strictly decreasing in i; with
    BOS value 0 and the repeated token's value v (|v| = eps + s, s > 0), error <= eps at
    position n (n B |v| <= eps (A + n B)) forces a_10 = A/(A + B) >= 1 - eps/(n |v| - (n-1) eps). *)
Lemma equal_tokens_row : forall d h X i, (1 <= i)%nat ->
  (forall k r, (1 <= k <= i)%nat -> (r < d)%nat -> X k r = X 1%nat r) ->
  softmax_weight d h X i 0 = exp (score d h (X i) (X 0%nat))
    / (exp (score d h (X i) (X 0%nat)) + INR i * exp (score d h (X i) (X 1%nat))).
Proof.
  intros d h X i Hi Heq. unfold softmax_weight. f_equal. rewrite sum_first. f_equal.
  apply sum_const. intros k Hk. f_equal. apply score_ext; [reflexivity|]. intros r Hr. apply Heq; lia.
Qed.

Lemma equal_tokens_bos_mass_decreases : forall A B (i : nat), 0 < A -> 0 < B ->
  A / (A + INR (S i) * B) < A / (A + INR i * B).
Proof.
  intros A B i HA HB. rewrite S_INR. assert (0 <= INR i) by apply pos_INR.
  unfold Rdiv. apply Rmult_lt_compat_l; [assumption|].
  assert (0 < A + INR i * B) by nra.
  apply Rinv_lt_contravar; [apply Rmult_lt_0_compat; nra | nra].
Qed.

Lemma equal_tokens_bos_mass_bound : forall A B eps s (n : nat), 0 < A -> 0 < B -> 0 < eps -> 0 < s ->
  (1 <= n)%nat -> INR n * B * (eps + s) <= eps * (A + INR n * B) ->
  A / (A + B) >= 1 - eps / (INR n * (eps + s) - (INR n - 1) * eps).
Proof.
  intros A B eps s n HA HB He Hs Hn Herr.
  assert (1 <= INR n) by (replace 1 with (INR 1) by reflexivity; apply le_INR; lia).
  replace (INR n * (eps + s) - (INR n - 1) * eps) with (INR n * s + eps) by ring.
  assert (0 < INR n * s + eps) by nra.
  apply Rle_ge. unfold Rdiv. apply Rmult_le_reg_r with ((A + B) * (INR n * s + eps)); [nra|].
  field_simplify; [nra | lra | lra].
Qed.

(** ** The trigger row equations along the two flags. *)

(** The images of BOS, of a content token and of the trigger with content c, read on the
    trigger flag (g) and on the content flag (h). *)
Definition g_b (d : nat) (h : head) : R := value d h (bos d) trigger_flag.
Definition g_t (d : nat) (h : head) (c : content) : R := value d h (content_token d c) trigger_flag.
Definition g_r (d : nat) (h : head) (c : content) : R := value d h (trigger_token d c) trigger_flag.
Definition h_b (d : nat) (h : head) : R := value d h (bos d) (content_flag d).
Definition h_t (d : nat) (h : head) (c : content) : R := value d h (content_token d c) (content_flag d).
Definition h_r (d : nat) (h : head) (c : content) : R := value d h (trigger_token d c) (content_flag d).

Section FlagRows.
Variables (d L : nat) (h : head) (eta : R) (c : content).
Hypothesis Hd : (4 <= d)%nat.
Let A := trigger_A d h c.
Let B := trigger_B d h c.
Let C := trigger_C d h c.

(** Content flag at the trigger j: target (j-1)/j, error delta_j. *)
Lemma content_flag_row : forall j, valid_trigger L j -> equal_content_error_le d L (head_output Softmax d h) c j eta ->
  exists delta, Rabs delta <= eta /\
  A * h_b d h + INR (j - 1) * B * h_t d h c + C * h_r d h c
  = (A + INR (j - 1) * B + C) * (INR (j - 1) / INR j + delta).
Proof.
  intros j Hj Herr. destruct (trigger_row_equation d L h eta c j (content_flag d) Herr Hj) as (delta & Hdl & E).
  { unfold content_flag. lia. }
  exists delta. split; [assumption|]. unfold h_b, h_t, h_r, A, B, C. rewrite E.
  rewrite content_content_flag, trigger_content_flag by assumption. unfold Rdiv. f_equal. f_equal. ring.
Qed.

(** Trigger flag at the trigger j: target 1/j, error gamma_j. *)
Lemma trigger_flag_row : forall j, valid_trigger L j -> equal_content_error_le d L (head_output Softmax d h) c j eta ->
  exists gamma, Rabs gamma <= eta /\
  A * g_b d h + INR (j - 1) * B * g_t d h c + C * g_r d h c
  = (A + INR (j - 1) * B + C) * (1 / INR j + gamma).
Proof.
  intros j Hj Herr. destruct (trigger_row_equation d L h eta c j trigger_flag Herr Hj) as (gamma & Hg & E).
  { unfold trigger_flag. lia. }
  exists gamma. split; [assumption|]. unfold g_b, g_t, g_r, A, B, C. rewrite E.
  rewrite content_trigger_flag, trigger_trigger_flag by assumption. unfold Rdiv. f_equal. f_equal. ring.
Qed.
End FlagRows.

(** The lemma, as T1 uses it: equal keys get equal weights (no positional encoding), the trigger
    row of S_j(c), the row along equal tokens and its BOS mass A/(A + i B), decreasing in i, and
    the bound at position 1 that error <= eps at position n forces. *)
Definition TokenConsistency : Prop :=
  (forall d (h : head) X i k k', (forall r, (r < d)%nat -> X k r = X k' r) ->
     softmax_weight d h X i k = softmax_weight d h X i k') /\
  (forall d (h : head) c j, (1 <= j)%nat -> forall k, (k <= j)%nat ->
     softmax_weight d h (equal_content d j c) j k
     = (if Nat.eqb k 0 then trigger_A d h c else if Nat.eqb k j then trigger_C d h c else trigger_B d h c)
       / (trigger_A d h c + INR (j - 1) * trigger_B d h c + trigger_C d h c)) /\
  (forall d (h : head) X i, (1 <= i)%nat -> (forall k r, (1 <= k <= i)%nat -> (r < d)%nat -> X k r = X 1%nat r) ->
     softmax_weight d h X i 0 = exp (score d h (X i) (X 0%nat))
       / (exp (score d h (X i) (X 0%nat)) + INR i * exp (score d h (X i) (X 1%nat)))) /\
  (forall A B (i : nat), 0 < A -> 0 < B -> A / (A + INR (S i) * B) < A / (A + INR i * B)) /\
  (forall A B eps s (n : nat), 0 < A -> 0 < B -> 0 < eps -> 0 < s -> (1 <= n)%nat ->
     INR n * B * (eps + s) <= eps * (A + INR n * B) ->
     A / (A + B) >= 1 - eps / (INR n * (eps + s) - (INR n - 1) * eps)).

Theorem token_consistency : TokenConsistency.
Proof.
  split; [exact equal_keys_equal_weights | split; [exact trigger_row_weights | split;
    [exact equal_tokens_row | split; [exact equal_tokens_bos_mass_decreases | exact equal_tokens_bos_mass_bound]]]].
Qed.
