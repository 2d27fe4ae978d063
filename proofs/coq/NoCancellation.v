(** No cancellation (proofs/no_cancellation.py): the non-BOS mass shows in the output when the
    non-BOS images agree, or all read >= m along one direction; without such a hypothesis two
    opposite images cancel with no BOS mass. Weights a_0 .. a_n on the simplex; images read
    coordinate by coordinate (u k r) or along a direction (p k = u . u_k). *)
Require Import Reals Lra Lia.
Require Import Sinks.Sums Sinks.Linear.
Open Scope R_scope.

Definition NoCancellation : Prop :=
  (forall (n : nat) (a : nat -> R) (u : nat -> vec) (v : vec) (r : nat),
     sum (S n) a = 1 -> (forall k, (1 <= k <= n)%nat -> u k r = v r) ->
     combine (S n) a u r - a 0%nat * u 0%nat r = (1 - a 0%nat) * v r /\
     (0 <= a 0%nat <= 1 -> (1 - a 0%nat) * Rabs (v r) <= Rabs (combine (S n) a u r) + a 0%nat * Rabs (u 0%nat r))) /\
  (forall (n : nat) (a p : nat -> R) (m : R), (forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 ->
     (forall k, (1 <= k <= n)%nat -> m <= p k) ->
     m * (1 - a 0%nat) <= sum (S n) (fun k => a k * p k) - a 0%nat * p 0%nat) /\
  (exists a p : nat -> R, a 0%nat = 0 /\ (forall k, (k <= 2)%nat -> 0 <= a k) /\ sum 3 a = 1 /\
     p 1%nat = 1 /\ p 2%nat = -1 /\ sum 3 (fun k => a k * p k) = 0).

Lemma equal_images : forall (n : nat) (a : nat -> R) (u : nat -> vec) (v : vec) (r : nat),
  sum (S n) a = 1 -> (forall k, (1 <= k <= n)%nat -> u k r = v r) ->
  combine (S n) a u r - a 0%nat * u 0%nat r = (1 - a 0%nat) * v r.
Proof.
  intros n a u v r Ha Hu. unfold combine. rewrite sum_first. rewrite sum_first in Ha.
  rewrite (sum_ext n _ (fun k => v r * a (S k))) by (intros k Hk; rewrite Hu by lia; ring).
  rewrite sum_scale. replace (sum n (fun k => a (S k))) with (1 - a 0%nat) by lra. ring.
Qed.

Theorem no_cancellation : NoCancellation.
Proof.
  split; [|split].
  - intros n a u v r Ha Hu. pose proof (equal_images n a u v r Ha Hu) as E. split; [exact E|].
    intros Ha0. rewrite <- (Rabs_pos_eq (1 - a 0%nat)) by lra. rewrite <- Rabs_mult, <- E.
    rewrite <- (Rabs_pos_eq (a 0%nat)) at 2 by lra. rewrite <- Rabs_mult.
    unfold Rminus. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra.
  - intros n a p m Ha Hs Hp. rewrite sum_first. rewrite sum_first in Hs.
    replace (a 0%nat * p 0%nat + sum n (fun k => a (S k) * p (S k)) - a 0%nat * p 0%nat)
      with (sum n (fun k => a (S k) * p (S k))) by ring.
    assert (Hm : sum n (fun k => a (S k) * m) = m * (1 - a 0%nat)).
    { rewrite (sum_ext n _ (fun k => m * a (S k))) by (intros; ring).
      rewrite sum_scale. replace (sum n (fun k => a (S k))) with (1 - a 0%nat) by lra. reflexivity. }
    rewrite <- Hm. apply sum_le. intros k Hk. apply Rmult_le_compat_l; [apply Ha; lia | apply Hp; lia].
  - exists (fun k => if Nat.eqb k 0 then 0 else 1 / 2), (fun k => if Nat.eqb k 1 then 1 else -1).
    repeat split; simpl; try lra.
    intros k Hk. destruct (Nat.eqb k 0); lra.
Qed.
