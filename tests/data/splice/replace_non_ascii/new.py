def grüße(名前, höflich=True):
    gruß = "Grüß Gott" if höflich else "Servus"
    return f"{gruß}, {名前}! 🎉"
