"""The broker's core, below the request handlers: partition logs, topics, coordinators, and the cluster role."""
