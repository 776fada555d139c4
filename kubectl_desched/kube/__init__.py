"""Cluster access: kubeconfig handling and the sources the cluster state is read from."""
