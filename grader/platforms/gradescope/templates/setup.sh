#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu 22.04).
# It installs Python, the CPU build of torch pinned below, and inplace-grader (the wheel that
# `inplace-grader gradescope build` put beside this file), in a venv that every user can read
# (the student's code runs as an unprivileged uid).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q python3 python3-venv python3-pip
python3 -m venv /opt/inplace-grader
/opt/inplace-grader/bin/pip install -q --upgrade pip
/opt/inplace-grader/bin/pip install -q "torch==@TORCH_VERSION@" --index-url https://download.pytorch.org/whl/cpu
/opt/inplace-grader/bin/pip install -q "/autograder/source/@WHEEL@"
chmod -R a+rX /opt/inplace-grader
