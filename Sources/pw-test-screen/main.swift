import CPipeWire
print("pw-test-screen: not yet written")
