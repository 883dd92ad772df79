# SPDX-License-Identifier: Apache-2.0
# Fails with MESSAGE: a docs test whose tool is missing says what to install instead of skipping.
message(FATAL_ERROR "${MESSAGE}")
