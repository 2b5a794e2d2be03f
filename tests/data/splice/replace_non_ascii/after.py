# -*- coding: utf-8 -*-
"""Grüße — greetings in many languages."""


def grüße(名前, höflich=True):
    gruß = "Grüß Gott" if höflich else "Servus"
    return f"{gruß}, {名前}! 🎉"


def ciao():
    return "ciao 👋"
