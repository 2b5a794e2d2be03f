# -*- coding: latin-1 -*-
def label():
    return "café"
