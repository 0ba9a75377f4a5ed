"""The project's own red team (issue 29): hostile input at its largest, cross-origin requests in a
real browser, the open routes with the database down, the operator under hostile specs. Fixtures
of the suites whose surfaces it attacks."""

from tests.api.test_ui_browser import browser, page
from tests.support.kube.fixtures import operator, operator_kubeconfig

__all__ = ["browser", "operator", "operator_kubeconfig", "page"]  # fixtures, for this folder
