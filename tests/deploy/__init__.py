"""Tests of the deployment: the images, the Helm chart, the dashboard and the alert rules."""
