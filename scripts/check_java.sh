#!/bin/sh
# PySpark 4 needs Java 17 or newer on the PATH (or under JAVA_HOME).
java_bin=java
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then java_bin="$JAVA_HOME/bin/java"; fi
if ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "reactive-spark needs Java 17+ for PySpark, and no 'java' was found." >&2
  echo "Install it (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2
  exit 1
fi
version=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)
major=$(echo "$version" | sed 's/^1\.//; s/[^0-9].*//')
if [ -z "$major" ] || [ "$major" -lt 17 ]; then
  echo "reactive-spark needs Java 17+ for PySpark; found '${version:-unknown}' ($java_bin)." >&2
  echo "Install a newer JDK (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2
  exit 1
fi
