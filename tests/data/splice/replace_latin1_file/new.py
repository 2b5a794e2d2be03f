def label():
    return "crème brûlée"
