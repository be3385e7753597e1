//! placeholder: scripted driver.
