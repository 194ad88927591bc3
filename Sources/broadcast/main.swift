print("broadcast")
