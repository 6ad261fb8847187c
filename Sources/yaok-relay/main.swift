// Placeholder until the command line lands.
print("yaok-relay")
