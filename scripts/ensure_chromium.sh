#!/bin/sh
# Install Debian's Chromium for the web console's browser test, when it is missing and we can.
# Without it the test is skipped, and says why.
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser test (apt-get)..."
  (apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) \
    || echo "could not install chromium: the browser test will be skipped"
else
  echo "chromium is not installed and cannot be installed here: the browser test will be skipped"
fi
exit 0
