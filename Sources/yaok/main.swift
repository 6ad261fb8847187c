print("yaok")
