# -*- coding: utf-8 -*-
"""Grüße — greetings in many languages."""


def grüße(名前):
    return f"Grüß Gott, {名前}!"


def ciao():
    return "ciao 👋"
