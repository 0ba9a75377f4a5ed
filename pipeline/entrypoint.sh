#!/bin/bash
# The pipeline image's entrypoint (Dockerfile.pipeline). Spark on Kubernetes starts the driver
# and executor pods of a `spark-submit --master k8s://...` job from this image with the first
# argument `driver` or `executor` and SPARK_* variables describing the job; anything else (such
# as `python3 -m tablequeue.pipeline archive ...`) runs as given.
set -euo pipefail

case "${1:-}" in
  driver)
    # The rest is spark-submit's own arguments, as the submitting client wrote them.
    shift
    exec spark-submit --deploy-mode client \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" "$@"
    ;;
  executor)
    # The driver hands the executor's JVM options over as SPARK_JAVA_OPT_0, _1, ... in order,
    # and spark.executor.extraClassPath (the JDBC drivers) as SPARK_CLASSPATH.
    options=()
    for index in $(compgen -e | sed -n 's/^SPARK_JAVA_OPT_\([0-9]*\)$/\1/p' | sort -n); do
      name="SPARK_JAVA_OPT_${index}"
      options+=("${!name}")
    done
    exec java "${options[@]}" -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CLASSPATH:+${SPARK_CLASSPATH}:}${SPARK_HOME}/conf:${SPARK_HOME}/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec "$@"
    ;;
esac
