# Copyright (c) 2025 Example Corp.
# SPDX-License-Identifier: MIT
"""Billing helpers."""

import math


def total(items):
    # sum the prices
    return sum(i.price for i in items)


def tax(amount):
    return amount * 0.2
