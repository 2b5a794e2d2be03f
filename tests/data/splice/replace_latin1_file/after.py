# -*- coding: latin-1 -*-
def label():
    return "crème brûlée"
