"""A broker that is one node of a cluster: controller quorum member, partition leader or follower."""
