"""Cluster controller: metadata state machine, placement, partition leader election and a Raft log."""
