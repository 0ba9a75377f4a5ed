"""A real Kubernetes control plane for tests: etcd, kube-apiserver, kube-controller-manager."""

from .control_plane import (
    ControlPlane,
    ControlPlaneError,
    KubectlError,
    build_control_plane,
    control_plane,
    pinned_versions,
)

__all__ = [
    "ControlPlane",
    "ControlPlaneError",
    "KubectlError",
    "build_control_plane",
    "control_plane",
    "pinned_versions",
]
